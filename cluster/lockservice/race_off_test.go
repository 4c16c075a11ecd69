//go:build !race

package lockservice

// raceEnabled: the race detector is on (it changes allocation counts).
const raceEnabled = false
