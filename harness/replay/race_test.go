//go:build race

package replay

// raceDetector: the race detector slows request handling several times.
const raceDetector = true
