package fsm

import "sort"

// RedisCommands lists the Redis commands the FSM implements, in lower
// case and sorted, so front ends can check a table of their own (the RESP
// bridge's key positions and permissions) against the whole surface.
func RedisCommands() []string {
	names := make([]string, 0, len(redisCmds))
	for n := range redisCmds {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
