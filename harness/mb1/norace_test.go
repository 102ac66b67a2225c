//go:build !race

package mb1

const raceDetector = false
