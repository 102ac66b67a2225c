//go:build race

package workload

// raceDetector: the race detector slows the analysis several times.
const raceDetector = true
