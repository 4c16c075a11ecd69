package redisbridge

import (
	"strings"
	"sync"

	"github.com/locknode/locknode/fsm"
	"github.com/locknode/locknode/fsm/reply"
)

// arityTable learns the arity of the FSM's Redis commands, so that MULTI
// can refuse a wrong-arity command when it is queued (EXECABORT, as
// Redis) instead of inside EXEC. The fsm package exports which commands
// exist but not their arity; rather than keep a second copy that could
// drift, the bridge asks the FSM itself, once per command name: it applies
// the command with 1..maxProbeArgs dummy arguments to a private scratch
// table (never replicated, never read) and notes which counts the FSM
// refuses with its wrong-arity error.
type arityTable struct {
	mu      sync.Mutex
	scratch *fsm.Table
	index   uint64
	known   map[string]int // name -> Redis-style arity; 0 = unknown
}

const maxProbeArgs = 10

func (a *arityTable) ok(name string, args [][]byte) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	ar, seen := a.known[name]
	if !seen {
		ar = a.probe(name)
		if a.known == nil {
			a.known = make(map[string]int)
		}
		a.known[name] = ar
	}
	return ar == 0 || arityOK(ar, len(args))
}

func (a *arityTable) probe(name string) int {
	if a.scratch == nil {
		a.scratch = fsm.New(fsm.Config{})
	}
	wrong := "ERR wrong number of arguments for '" + name + "' command"
	accepted := make([]bool, maxProbeArgs+1)
	for n := 1; n <= maxProbeArgs; n++ {
		args := make([][]byte, n)
		args[0] = []byte(name)
		for i := 1; i < n; i++ {
			args[i] = []byte("0")
		}
		a.index++
		r := a.scratch.Apply(a.index, &fsm.Command{Op: fsm.OpRedis, Args: args})
		accepted[n] = !(r.Reply.Kind == reply.Error && strings.EqualFold(r.Reply.Str, wrong))
	}
	first := 0
	for n := 1; n <= maxProbeArgs; n++ {
		if accepted[n] {
			first = n
			break
		}
	}
	if first == 0 {
		return 0 // never accepted: leave the check to the FSM
	}
	for n := first + 1; n <= maxProbeArgs; n++ {
		if !accepted[n] {
			return first // exactly first (none of the FSM's commands takes a fixed count plus gaps)
		}
	}
	return -first
}
