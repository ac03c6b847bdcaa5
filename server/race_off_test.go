//go:build !race

package server

// raceEnabled: the race detector is on, which slows a calibration about tenfold.
const raceEnabled = false
