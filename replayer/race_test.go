//go:build race

package replayer

// raceDetector: the race detector slows request handling several times.
const raceDetector = true
