//go:build race

package planner_test

// raceEnabled: the race detector is on (it makes a search about ten times slower).
const raceEnabled = true
