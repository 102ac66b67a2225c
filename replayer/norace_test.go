//go:build !race

package replayer

const raceDetector = false
