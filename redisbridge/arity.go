package redisbridge

import (
	"strings"
	"sync"

	"github.com/locknode/locknode/fsm"
	"github.com/locknode/locknode/fsm/reply"
)

// arityTable learns the arity of the FSM's Redis commands, so that the
// bridge refuses a wrong-arity command before it costs a log entry, before
// the authentication check (Redis' order), and when MULTI queues it
// (EXECABORT, as Redis) rather than inside EXEC. The fsm package exports which commands
// exist but not their arity; rather than keep a second copy that could
// drift, the bridge asks the FSM itself, once per command name: it applies
// the command with 1..maxProbeArgs dummy arguments to a private scratch
// table (never replicated, never read) and notes which counts the FSM
// refuses with its wrong-arity error.
type arityTable struct {
	mu      sync.RWMutex // guards known
	probeMu sync.Mutex   // guards scratch and index
	scratch *fsm.Table
	index   uint64
	known   map[string]int // name -> Redis-style arity; 0 = unknown
}

const maxProbeArgs = 10

// ok reports whether args has an arity the FSM accepts for name (a
// command fsm.IsKnownCommand knows, in lower case).
func (a *arityTable) ok(name string, args [][]byte) bool {
	ar := a.of(name)
	return ar == 0 || arityOK(ar, len(args))
}

// of returns name's Redis-style arity, 0 when unknown.
func (a *arityTable) of(name string) int {
	a.mu.RLock()
	ar, seen := a.known[name]
	a.mu.RUnlock()
	if !seen {
		ar = a.probe(name)
		a.mu.Lock()
		if a.known == nil {
			a.known = make(map[string]int)
		}
		a.known[name] = ar
		a.mu.Unlock()
	}
	return ar
}

func (a *arityTable) probe(name string) int {
	a.probeMu.Lock()
	defer a.probeMu.Unlock()
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
	// Any larger accepted count means "at least first"; handlers may refuse
	// some counts in between with the same text (HSET wants pairs), which
	// the FSM still checks itself.
	for n := first + 1; n <= maxProbeArgs; n++ {
		if accepted[n] {
			return -first
		}
	}
	return first
}
