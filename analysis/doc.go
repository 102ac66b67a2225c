// Package analysis holds the fits kvtier draws conclusions from: cost
// curves fitted to measured points, checked for sign and goodness of fit
// before anything predicts from them. It imports no suite, no report and
// no plotting: report and plots import it.
package analysis
