package fsm

import (
	"sort"
	"strings"
)

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

// CommandArity returns the arity of the Redis command name (lower case)
// as Apply enforces it, in Redis' convention (n: exactly n arguments, the
// name included; -n: at least n), or 0 when the FSM does not implement
// name. Front ends refuse a wrong count with it before proposing an entry.
// Some commands refuse further counts inside (HSET wants pairs); Apply
// still checks those.
func CommandArity(name string) int {
	if c := redisCmds[name]; c != nil {
		return c.arity
	}
	return 0
}

// CommandKeys returns the arguments of the Redis command args that are
// keys, by Redis' key specifications (first key, last key, step). Every
// command not listed takes exactly one key, args[1]. args must have the
// command's arity.
func CommandKeys(args [][]byte) [][]byte {
	return CommandKeysOf(strings.ToLower(string(args[0])), args)
}

// CommandKeysOf is CommandKeys for a caller that has the command's name
// in lower case already (no allocation).
func CommandKeysOf(name string, args [][]byte) [][]byte {
	switch name {
	case "time", "ping", "publish":
		return nil
	case "del", "unlink", "exists", "mget":
		return args[1:]
	case "mset", "msetnx":
		keys := make([][]byte, 0, len(args)/2)
		for i := 1; i < len(args); i += 2 {
			keys = append(keys, args[i])
		}
		return keys
	}
	if len(args) < 2 {
		return nil
	}
	return args[1:2]
}

// IsReadOnlyName is IsReadOnly for a name in lower case (no allocation).
func IsReadOnlyName(name string) bool {
	c := redisCmds[name]
	return c != nil && c.ro
}
