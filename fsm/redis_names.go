package fsm

import "github.com/locknode/locknode/fsm/rediscmd"

// The facts about each Redis command — arity, flags, key positions — are
// kept once, in the command catalogue (package rediscmd); the key space's
// command table (redis.go) holds the handlers and is checked against it
// (catalog_test.go).

// CommandKeysOf returns the arguments of the Redis command args (named
// name, in lower case) that are keys, by the catalogue's key
// specifications; nil for a command the catalogue does not know. args
// must have the command's arity.
func CommandKeysOf(name string, args [][]byte) [][]byte {
	if s := rediscmd.Lookup(name); s != nil {
		return s.KeyArgs(args)
	}
	return nil
}
