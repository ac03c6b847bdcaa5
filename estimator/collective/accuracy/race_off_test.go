//go:build !race

package accuracy_test

const raceEnabled = false
