//go:build race

package cluster

// raceEnabled: the race detector is on (it changes allocation counts).
const raceEnabled = true
