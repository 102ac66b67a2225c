//go:build race

package mb1

// raceDetector: the race detector slows request handling several times,
// which a real-time check would count as front-end time.
const raceDetector = true
