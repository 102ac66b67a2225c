//go:build !race

package knee

const raceDetector = false
