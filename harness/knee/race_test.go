//go:build race

package knee

// raceDetector: the race detector slows request handling several times.
const raceDetector = true
