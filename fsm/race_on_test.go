//go:build race

package fsm

// raceEnabled: the race detector is on (it changes allocation counts).
const raceEnabled = true
