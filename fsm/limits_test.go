package fsm

import (
	"bytes"
	"strings"
	"testing"
)

// TestRedisLeaseLimits: a Redis command that asks for a lock lease over
// MaxTTL (SET NX, SET IFEQ, the EXPIRE family on a lock, the same from a
// script, the native compare-and-pexpire) is refused with an error and
// changes nothing, rather than being granted a shorter lease than it was
// told; numbers that do not parse or overflow get Redis' errors; a lease
// of exactly MaxTTL, and a string's expiry of any length, are accepted.
func TestRedisLeaseLimits(t *testing.T) {
	const over = "-ERR locknode: ttl 172800000 ms is over the limit of 86400000 ms"
	cape := `
	if redis.call("GET", KEYS[1]) == ARGV[1] then
		return redis.call("PEXPIRE", KEYS[1], ARGV[2])
	else
		return 0
	end
`
	setnx := `return redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2])`
	tests := []struct {
		name   string
		cmd    []string // a Redis command, or EVAL script key args...
		want   string   // the reply, or its prefix when it ends in "*"
		change bool     // the command is accepted and changes the table
	}{
		{"SET NX PX over", []string{"SET", "k", "tok", "NX", "PX", "172800000"}, over, false},
		{"SET NX EX over", []string{"SET", "k", "tok", "NX", "EX", "172800"}, over, false},
		{"SET NX PXAT over", []string{"SET", "k", "tok", "NX", "PXAT", "173800000"}, over, false},
		{"SET NX EXAT over", []string{"SET", "k", "tok", "NX", "EXAT", "173800"}, over, false},
		{"SET NX PX by the holder over", []string{"SET", "lock", "tok", "NX", "PX", "172800000"}, over, false},
		{"SET NX PX max exactly", []string{"SET", "k", "tok", "NX", "PX", "86400000"}, "+OK", true},
		{"SET NX PX 0", []string{"SET", "k", "tok", "NX", "PX", "0"}, "-ERR invalid expire time in 'set' command", false},
		{"SET NX PX negative", []string{"SET", "k", "tok", "NX", "PX", "-5"}, "-ERR invalid expire time in 'set' command", false},
		{"SET NX PX overflow", []string{"SET", "k", "tok", "NX", "PX", "9223372036854775807"}, "-ERR invalid expire time in 'set' command", false},
		{"SET NX EX overflow", []string{"SET", "k", "tok", "NX", "EX", "9223372036854775"}, "-ERR invalid expire time in 'set' command", false},
		{"SET NX PX past int64", []string{"SET", "k", "tok", "NX", "PX", "18446744073709551616"}, "-ERR value is not an integer or out of range", false},
		{"SET NX PX not a number", []string{"SET", "k", "tok", "NX", "PX", "soon"}, "-ERR value is not an integer or out of range", false},
		{"SET IFEQ PX over", []string{"SET", "lock", "tok", "IFEQ", "tok", "PX", "172800000"}, over, false},
		{"PEXPIRE lock over", []string{"PEXPIRE", "lock", "172800000"}, over, false},
		{"EXPIRE lock over", []string{"EXPIRE", "lock", "172800"}, over, false},
		{"PEXPIREAT lock over", []string{"PEXPIREAT", "lock", "173800000"}, over, false},
		{"EXPIREAT lock over", []string{"EXPIREAT", "lock", "173800"}, over, false},
		{"PEXPIRE lock max exactly", []string{"PEXPIRE", "lock", "86400000"}, ":1", true},
		{"PEXPIRE lock overflow", []string{"PEXPIRE", "lock", "9223372036854775807"}, "-ERR invalid expire time in 'pexpire' command", false},
		{"EXPIRE lock overflow", []string{"EXPIRE", "lock", "9223372036854775807"}, "-ERR invalid expire time in 'expire' command", false},
		{"PEXPIRE lock not a number", []string{"PEXPIRE", "lock", "18446744073710000000"}, "-ERR value is not an integer or out of range", false},
		{"script SET NX PX over", []string{"EVAL", setnx, "k", "tok", "172800000"}, "-ERR locknode: ttl 172800000 ms is over*", false},
		{"compare-and-pexpire over", []string{"EVAL", cape, "lock", "tok", "172800000"}, "-ERR locknode: ttl 172800000 ms is over*", false},
		{"compare-and-pexpire max exactly", []string{"EVAL", cape, "lock", "tok", "86400000"}, ":1", true},
		{"string SET PX over", []string{"SET", "str", "v", "PX", "172800000"}, "+OK", true},
		{"string PEXPIRE over", []string{"PEXPIRE", "plain", "172800000"}, ":1", true},
	}
	setup := [][]string{
		{"SET", "lock", "tok", "NX", "PX", "10000"},
		{"SET", "plain", "v"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, b := newRT(t), newRT(t)
			for _, r := range []*rt{a, b} {
				for _, s := range setup {
					r.do(s...)
				}
				// Cached already, so EVAL adds nothing to the table.
				r.apply(&Command{Op: OpScriptLoad, Script: []byte(setnx)})
				r.apply(&Command{Op: OpScriptLoad, Script: []byte(cape)})
			}
			var got string
			if tc.cmd[0] == "EVAL" {
				got = fmtReply(a.eval(tc.cmd[1], 1, tc.cmd[2:]...))
			} else {
				got = fmtReply(a.do(tc.cmd...))
			}
			if p, ok := strings.CutSuffix(tc.want, "*"); ok && !strings.HasPrefix(got, p) || !ok && got != tc.want {
				t.Fatalf("reply %s, want %s", got, tc.want)
			}
			b.apply(&Command{Op: OpTick})
			if same := bytes.Equal(snap(t, a.t), snap(t, b.t)); same == tc.change {
				t.Fatalf("table changed: %v, want %v", !same, tc.change)
			}
		})
	}
}

// TestFenceRegistryBound: the registry accepts tokens up to the highest
// fence ever granted (by a native acquire or a Redis SET NX, also after
// the hold ended) and refuses any above it, changing nothing.
func TestFenceRegistryBound(t *testing.T) {
	r := newRT(t)
	check := func(token uint64) Result {
		return r.apply(&Command{Op: OpFenceCheck, Key: "res", Token: token})
	}
	if res := check(1); res.Err == nil {
		t.Fatalf("token 1 on an empty table accepted")
	}
	r.apply(&Command{Op: OpAcquire, Key: "a", Owner: "o", TTL: 1000}) // index 2: fence 2
	r.apply(&Command{Op: OpRelease, Key: "a", Owner: "o"})
	r.do("SET", "l", "tok", "NX", "PX", "1000") // index 4: fence 4
	r.do("SET", "s", "v")
	if r.t.maxFence != 4 {
		t.Fatalf("highest fence %d, want 4", r.t.maxFence)
	}
	for _, tok := range []uint64{5, 6, 1 << 63, 18446744073709551615} {
		res := check(tok)
		if res.Err == nil || !strings.Contains(res.Err.Error(), "above the highest fence issued, 4") {
			t.Fatalf("token %d: %v, want a refusal", tok, res.Err)
		}
		if _, ok := r.t.fences["res"]; ok {
			t.Fatalf("token %d: refused but recorded", tok)
		}
	}
	if res := check(4); res.Err != nil || res.Fence != 4 {
		t.Fatalf("token 4: %+v", res)
	}
	if res := check(2); res.Err == nil {
		t.Fatalf("token 2 after 4 accepted")
	}
}
