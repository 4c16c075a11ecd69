package fsm

import (
	"strings"
	"testing"
)

// TestStringCommandsOnLocks: GETDEL, GETEX and APPEND on a lock key keep
// the lock rules (a forced release, an extend bounded by MaxTTL, a lease
// that cannot be made endless, no write that changes the token), and
// APPEND is bounded by MaxValueBytes.
func TestStringCommandsOnLocks(t *testing.T) {
	cases := []struct {
		name    string
		args    []string
		want    string
		pttl    func(int64) bool // the lock's PTTL after the command
		forced  bool             // the command ends the hold by force
		noEvent bool
	}{
		{name: "getdel is a forced release", args: []string{"GETDEL", "l"}, want: `"tok"`,
			pttl: func(p int64) bool { return p == -2 }, forced: true},
		{name: "getex px extends", args: []string{"GETEX", "l", "PX", "50000"}, want: `"tok"`,
			pttl: func(p int64) bool { return p == 50000 }, noEvent: true},
		{name: "getex over MaxTTL is refused", args: []string{"GETEX", "l", "PX", "999999999"},
			want: "-ERR locknode: ttl 999999999 ms is over the limit of",
			pttl: func(p int64) bool { return p == 10000 }, noEvent: true},
		{name: "getex persist leaves the lease", args: []string{"GETEX", "l", "PERSIST"}, want: `"tok"`,
			pttl: func(p int64) bool { return p == 10000 }, noEvent: true},
		{name: "getex exat past ends it", args: []string{"GETEX", "l", "EXAT", "1"}, want: `"tok"`,
			pttl: func(p int64) bool { return p == -2 }, forced: true},
		{name: "append is refused", args: []string{"APPEND", "l", "x"}, want: "-" + errWrongType,
			pttl: func(p int64) bool { return p == 10000 }, noEvent: true},
		{name: "incr is not a counter", args: []string{"INCR", "l"}, want: "-" + errNotInt,
			pttl: func(p int64) bool { return p == 10000 }, noEvent: true},
		{name: "strlen is the token's", args: []string{"STRLEN", "l"}, want: ":3",
			pttl: func(p int64) bool { return p == 10000 }, noEvent: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newRT(t)
			r.do("SET", "l", "tok", "NX", "PX", "10000")
			res := r.apply(&Command{Op: OpRedis, Args: bargs(tc.args...)})
			if got := fmtReply(res.Reply); !strings.HasPrefix(got, tc.want) {
				t.Fatalf("%v: %s, want %s", tc.args, got, tc.want)
			}
			var reasons []Reason
			for _, e := range res.Events {
				if e.Kind == EvReleased {
					reasons = append(reasons, e.Reason)
				}
			}
			if tc.forced && (len(reasons) != 1 || reasons[0] != ReasonForced) {
				t.Fatalf("released with %v, want one forced release", reasons)
			}
			if tc.noEvent && len(reasons) != 0 {
				t.Fatalf("released with %v, want no release", reasons)
			}
			if p := r.do("PTTL", "l"); !tc.pttl(p.Int) {
				t.Fatalf("PTTL after: %d", p.Int)
			}
		})
	}
}

func TestAppendBoundedByMaxValueBytes(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxValueBytes = 8
	r := newRTConfig(t, cfg)
	if got := fmtReply(r.do("APPEND", "a", "12345")); got != ":5" {
		t.Fatalf("APPEND: %s", got)
	}
	if got := fmtReply(r.do("APPEND", "a", "6789")); got != "-"+errValGrowsLong {
		t.Fatalf("APPEND past the limit: %s", got)
	}
	if got := fmtReply(r.do("APPEND", "a", "678")); got != ":8" {
		t.Fatalf("APPEND up to the limit: %s", got)
	}
	if got := fmtReply(r.do("GET", "a")); got != `"12345678"` {
		t.Fatalf("GET: %s", got)
	}
}
