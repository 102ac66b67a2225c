//go:build race

package trace

// raceDetector: the race detector slows the analysis several times.
const raceDetector = true
