package redisbridge

import (
	"strconv"
	"strings"
	"testing"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/locktest"
)

// lockArgs renders a shared limits case as its LOCK.* command; ok is
// false for a case RESP has no command for (sessions).
func lockArgs(c locktest.RequestCase) (args []string, ok bool) {
	itoa := func(n int64) string { return strconv.FormatInt(n, 10) }
	switch {
	case c.Acquire != nil:
		r := c.Acquire
		args = []string{"LOCK.ACQUIRE", r.Key, r.Owner, itoa(r.TTLMs)}
		if c.Wait {
			args = append(args, "WAIT", itoa(r.WaitMs))
		}
		if r.Mode != "" {
			args = append(args, "MODE", r.Mode)
		}
		if r.Permits != 0 {
			args = append(args, "PERMITS", itoa(int64(r.Permits)))
		}
		if r.LockDelay != 0 {
			args = append(args, "LOCKDELAY", itoa(r.LockDelay))
		}
		if r.MaxHoldMs != 0 {
			args = append(args, "MAXHOLD", itoa(r.MaxHoldMs))
		}
		return args, true
	case c.Extend != nil:
		return []string{"LOCK.EXTEND", c.Extend.Key, c.Extend.Owner, itoa(c.Extend.TTLMs)}, true
	case c.Release != nil:
		return []string{"LOCK.RELEASE", c.Release.Key, c.Release.Owner}, true
	}
	return nil, false
}

// TestLockLimits: the shared limits cases (locktest.RequestCases) over
// RESP, plus what only RESP can send (numbers that are not numbers or do
// not fit in 64 bits), and the fence registry: each is refused with the
// error and nothing changes; a lease of exactly the longest TTL is granted.
func TestLockLimits(t *testing.T) {
	s, _ := testServer(t, Config{})
	c := dialRaw(t, s)
	const key, owner = "lim", "o"
	wantPrefix := map[error]string{api.ErrLimit: "LIMIT over a limit", api.ErrBadRequest: "ERR bad request"}
	for _, tc := range locktest.RequestCases(key, owner) {
		args, ok := lockArgs(tc)
		if !ok {
			continue
		}
		t.Run(tc.Name, func(t *testing.T) {
			v := c.do(args...)
			wantErrPrefix(t, v, wantPrefix[tc.Want])
			if !strings.Contains(v.Str, tc.Mention) {
				t.Fatalf("%v: error %q does not say %q", args, v.Str, tc.Mention)
			}
		})
	}
	const notInt = "ERR value is not an integer or out of range"
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"ttl not a number", []string{"LOCK.ACQUIRE", key, owner, "ten"}, notInt},
		{"ttl past int64", []string{"LOCK.ACQUIRE", key, owner, "9223372036854775808"}, notInt},
		{"ttl float", []string{"LOCK.ACQUIRE", key, owner, "1.5"}, notInt},
		{"wait past int64", []string{"LOCK.ACQUIRE", key, owner, "1000", "WAIT", "18446744073709551616"}, notInt},
		{"wait overflowing a duration", []string{"LOCK.ACQUIRE", key, owner, "1000", "WAIT", "18446744073710"},
			"LIMIT over a limit (wait_ms 18446744073710 ms is over the limit of 86400000 ms (--max-ttl))"},
		{"permits past int64", []string{"LOCK.ACQUIRE", key, owner, "1000", "MODE", "semaphore", "PERMITS", "1180591620717411303424"}, notInt},
		{"permits not a number", []string{"LOCK.ACQUIRE", key, owner, "1000", "MODE", "semaphore", "PERMITS", "many"}, notInt},
		{"extend ttl past int64", []string{"LOCK.EXTEND", key, owner, "99999999999999999999"}, notInt},
		{"extend ttl negative", []string{"LOCK.EXTEND", key, owner, "-1"}, "ERR bad request"},
		{"fence token negative", []string{"FENCE.CHECK", "res", "-1"}, notInt},
		{"fence token past uint64", []string{"FENCE.CHECK", "res", "18446744073709551616"}, notInt},
		{"fence token max uint64", []string{"FENCE.CHECK", "res", "18446744073709551615"}, "ERR bad request"},
		{"fence key oversized", []string{"FENCE.CHECK", strings.Repeat("r", 513), "1"}, "LIMIT over a limit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantErrPrefix(t, c.do(tc.args...), tc.want)
		})
	}
	if v := c.do("LOCK.INFO", key); !v.Null {
		t.Fatalf("refused requests changed %s: %v", key, v)
	}

	// The longest lease is granted, and its fence is the highest the
	// registry accepts: one more is refused and changes nothing.
	v := c.do("LOCK.ACQUIRE", key, owner, strconv.Itoa(api.DefaultMaxTTLMs))
	if v.Type != '*' || len(v.Elems) != 2 {
		t.Fatalf("lease of the longest TTL: %v", v)
	}
	fence := v.Elems[0].Int
	wantErrPrefix(t, c.do("FENCE.CHECK", "res", strconv.FormatInt(fence+1, 10)), "ERR bad request")
	if v := c.do("FENCE.CHECK", "res", strconv.FormatInt(fence, 10)); len(v.Elems) != 2 || v.Elems[0].Int != 1 || v.Elems[1].Int != fence {
		t.Fatalf("fence check with the granted fence: %v", v)
	}
}
