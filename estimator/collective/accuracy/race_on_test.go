//go:build race

package accuracy_test

// raceEnabled: the race detector slows the cross-validation (14 refits) about
// tenfold; those tests run in CI's separate step without it.
const raceEnabled = true
