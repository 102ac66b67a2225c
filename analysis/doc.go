// Package analysis holds what kvtier concludes from a results directory,
// below its two presentations (report's tables, plots' figures): loading
// a run's CSV files and manifest, grouping and summary statistics, the
// fitted cost model per tier (curves checked for sign and goodness of fit
// before anything predicts from them), break-even prefixes, provenance
// (measured, stand-in, simulated, predicted), the reference figures kvtier
// is compared with, and the index of a run's figures. It imports no suite,
// no report and no plotting: report and plots import it.
package analysis
