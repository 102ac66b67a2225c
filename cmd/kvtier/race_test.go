//go:build race

package main

// raceDetector: the race detector slows request handling several times.
const raceDetector = true
