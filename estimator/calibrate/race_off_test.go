//go:build !race

package calibrate_test

const raceEnabled = false
