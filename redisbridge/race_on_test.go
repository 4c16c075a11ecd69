//go:build race

package redisbridge

// raceEnabled: the race detector is on (it changes allocation counts).
const raceEnabled = true
