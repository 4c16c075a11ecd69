package compat

import (
	"fmt"
	"testing"
	"time"

	"github.com/locknode/locknode/fsm/rediscmd"
)

// TestCommandInfoVsRedis: COMMAND INFO of every catalogued command Redis
// 7.0 also has answers as a real redis-server does — name, arity, flags,
// first/last key and step, ACL categories, tips and key specifications
// (subcommands, the tenth field, locknode does not list) — in RESP2 and
// RESP3; and COMMAND GETKEYS finds the same keys, or refuses alike, for
// a set of argument lists. The catalogue's entries are copies of Redis'
// own; this keeps them so.
func TestCommandInfoVsRedis(t *testing.T) {
	redisAddr := startRedis(t)
	tc := newCluster(t, 1)
	tc.leader(10 * time.Second)
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			rc, lc := dialRESP(t, redisAddr, proto), dialRESP(t, tc.resp[0], proto)
			compared := 0
			for _, s := range rediscmd.All() {
				want, got := mustDo(t, rc, "COMMAND", "INFO", s.Name), mustDo(t, lc, "COMMAND", "INFO", s.Name)
				if len(want.elems) != 1 || len(got.elems) != 1 {
					t.Fatalf("COMMAND INFO %s: locknode %v, redis %v", s.Name, got, want)
				}
				w, g := want.elems[0], got.elems[0]
				if w.kind == '_' {
					t.Logf("%s: not a Redis 7.0 command", s.Name)
					continue
				}
				if len(w.elems) != 10 || len(g.elems) != 10 {
					t.Fatalf("COMMAND INFO %s: locknode %v, redis %v", s.Name, g, w)
				}
				for i, f := range []string{"name", "arity", "flags", "first key", "last key", "step", "categories", "tips", "key specs"} {
					if w.elems[i].String() != g.elems[i].String() {
						t.Errorf("COMMAND INFO %s %s: locknode %v, redis %v", s.Name, f, g.elems[i], w.elems[i])
					}
				}
				compared++
			}
			if compared < 80 {
				t.Errorf("only %d commands compared", compared)
			}
			for _, args := range [][]string{
				{"SET", "k", "v", "NX", "PX", "1000"},
				{"GET", "k"},
				{"MSET", "a", "1", "b", "2"},
				{"DEL", "a", "b", "c"},
				{"EXISTS", "a"},
				{"HSET", "h", "f", "v"},
				{"WATCH", "a", "b"},
				{"EVAL", "return 1", "2", "x", "y", "z"},
				{"EVALSHA", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db", "1", "x"},
				{"EVAL_RO", "return 1", "1", "x"},
				{"EVAL", "return 1", "0"},
				{"EVAL", "return 1", "3", "x", "y"},
				{"EVAL", "return 1", "x", "y"},
				{"PING"},
				{"PING", "x"},
				{"PUBLISH", "ch", "m"},
				{"GET"},
				{"GET", "a", "b"},
				{"SET", "k"},
				{"MSET", "a", "1", "b"},
				{"NOSUCH", "a"},
			} {
				full := append([]string{"COMMAND", "GETKEYS"}, args...)
				if want, got := mustDo(t, rc, full...), mustDo(t, lc, full...); want.String() != got.String() {
					t.Errorf("%q: locknode %v, redis %v", full, got, want)
				}
			}
		})
	}
}

func mustDo(t *testing.T, c *respConn, args ...string) rv {
	t.Helper()
	r, err := c.do(args...)
	if err != nil {
		t.Fatalf("%q: %v", args, err)
	}
	return r
}
