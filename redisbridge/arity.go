package redisbridge

import "github.com/locknode/locknode/fsm"

// The bridge refuses a wrong-arity command before it costs a log entry,
// before the authentication check (Redis' order), and when MULTI queues
// it (EXECABORT, as Redis) rather than inside EXEC. Each arity is kept
// once: the bridge's own commands in their table entry (commands.go),
// the FSM's Redis commands in the FSM's command table (fsm.CommandArity),
// which Apply enforces.

// arityOf is cmd's Redis-style arity (0: not checked here).
func arityOf(cmd *command, name string) int {
	if cmd == dataCommand {
		return fsm.CommandArity(name)
	}
	return cmd.arity
}

// arityAccepts reports whether args has an arity cmd (named name, in lower
// case) accepts.
func arityAccepts(cmd *command, name string, args [][]byte) bool {
	ar := arityOf(cmd, name)
	return ar == 0 || arityOK(ar, len(args))
}
