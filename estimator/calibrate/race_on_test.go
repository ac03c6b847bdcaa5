//go:build race

package calibrate_test

// raceEnabled: the race detector is on. Under it sync.Pool drops some of what is put
// back (sync/pool.go: "randomly drop x on floor" when race.Enabled), so regexp's
// cached matchers are rebuilt and allocation counts are not the program's.
const raceEnabled = true
