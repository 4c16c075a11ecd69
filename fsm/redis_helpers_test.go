package fsm

import (
	"fmt"
	"strings"
	"testing"

	"github.com/locknode/locknode/fsm/reply"
)

// rt drives a Table with Redis commands at controllable times.
type rt struct {
	tb    testing.TB
	t     *Table
	index uint64
	now   int64
}

func newRT(tb testing.TB) *rt {
	return &rt{tb: tb, t: New(DefaultConfig()), now: 1_000_000}
}

func (r *rt) apply(cmd *Command) Result {
	r.index++
	cmd.Time = r.now
	res := r.t.Apply(r.index, cmd)
	if err := checkMemory(r.t); err != nil {
		r.tb.Fatalf("after op %d %q: %v", cmd.Op, cmd.Args, err)
	}
	return res
}

func (r *rt) do(args ...string) reply.Reply {
	return r.apply(&Command{Op: OpRedis, Args: bargs(args...)}).Reply
}

func (r *rt) eval(script string, nkeys int, args ...string) reply.Reply {
	b := bargs(args...)
	return r.apply(&Command{Op: OpEval, Script: []byte(script), KeysB: b[:nkeys], Args: b[nkeys:]}).Reply
}

func bargs(args ...string) [][]byte {
	out := make([][]byte, len(args))
	for i, a := range args {
		out[i] = []byte(a)
	}
	return out
}

// fmtReply renders a reply compactly for table tests:
// nil, (nil-array), +OK, -ERR ..., :1, "bulk", ~1.5 (double), [a b].
func fmtReply(r reply.Reply) string {
	switch r.Kind {
	case reply.Nil:
		return "nil"
	case reply.NilArray:
		return "(nil-array)"
	case reply.Status:
		return "+" + r.Str
	case reply.Error:
		return "-" + r.Str
	case reply.Int:
		return fmt.Sprintf(":%d", r.Int)
	case reply.Bulk:
		return fmt.Sprintf("%q", r.Str)
	case reply.Double:
		return "~" + r.Str
	case reply.Array, reply.Map, reply.Set, reply.Pairs:
		parts := make([]string, len(r.Arr))
		for i, e := range r.Arr {
			parts[i] = fmtReply(e)
		}
		return "[" + strings.Join(parts, " ") + "]"
	}
	return "?"
}
