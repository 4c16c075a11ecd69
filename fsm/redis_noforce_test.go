package fsm

import (
	"bytes"
	"strings"
	"testing"
)

// TestNoForce: with Command.NoForce, every Redis way of ending or
// changing a live lock without its token is refused and changes nothing;
// the owner-proven ways and plain keys still work; without NoForce the
// same commands force as before.
func TestNoForce(t *testing.T) {
	const refused = "-" + errNoForce
	cases := []struct {
		name string
		args []string
		want string // with NoForce
	}{
		{"del", []string{"DEL", "plain", "l"}, refused},
		{"unlink", []string{"UNLINK", "l"}, refused},
		{"delex", []string{"DELEX", "l"}, refused},
		{"delex-ifne", []string{"DELEX", "l", "IFNE", "x"}, refused},
		{"set-over", []string{"SET", "l", "v"}, refused},
		{"set-xx", []string{"SET", "l", "v", "XX"}, refused},
		{"mset-over", []string{"MSET", "plain", "v", "l", "v"}, refused},
		{"pexpire", []string{"PEXPIRE", "l", "1"}, refused},
		{"expire", []string{"EXPIRE", "l", "100"}, refused},
		{"pexpireat", []string{"PEXPIREAT", "l", "1"}, refused},
		{"expireat", []string{"EXPIREAT", "l", "1"}, refused},
		{"persist", []string{"PERSIST", "l"}, refused},
		{"getdel", []string{"GETDEL", "l"}, refused},
		{"getex-px", []string{"GETEX", "l", "PX", "20000"}, refused},
		{"getex-exat", []string{"GETEX", "l", "EXAT", "1"}, refused},
		{"getex-read", []string{"GETEX", "l"}, `"tok"`},
		{"getex-persist", []string{"GETEX", "l", "PERSIST"}, `"tok"`},
		{"getdel-plain", []string{"GETDEL", "plain"}, `"v"`},
		{"set-nx-taken", []string{"SET", "l", "v", "NX"}, "nil"},
		{"delex-ifeq-owner", []string{"DELEX", "l", "IFEQ", "tok"}, ":1"},
		{"del-plain", []string{"DEL", "plain"}, ":1"},
		{"set-plain", []string{"SET", "plain", "w"}, "+OK"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newRT(t)
			r.do("SET", "l", "tok", "NX", "PX", "10000")
			r.do("SET", "plain", "v")
			got := r.apply(&Command{Op: OpRedis, Args: bargs(tc.args...), NoForce: true}).Reply
			if s := fmtReply(got); s != tc.want {
				t.Fatalf("with NoForce: %s, want %s", s, tc.want)
			}
			if tc.want == refused {
				if s := fmtReply(r.do("GET", "l")); s != `"tok"` {
					t.Fatalf("a refused command changed the lock: GET %s", s)
				}
				if s := fmtReply(r.do("GET", "plain")); s != `"v"` {
					t.Fatalf("a refused command changed another key: GET %s", s)
				}
				// The same command without NoForce: as before.
				if s := fmtReply(r.do(tc.args...)); s == refused {
					t.Fatalf("without NoForce: %s", s)
				}
			}
		})
	}

	// Scripts: the lock libraries' compare-and-delete runs (the owner's
	// token is its proof); a script that DELs the lock is refused, in
	// MULTI too.
	r := newRT(t)
	r.do("SET", "l", "tok", "NX", "PX", "10000")
	del := `return redis.call("del", KEYS[1])`
	if got := fmtReply(r.apply(&Command{Op: OpEval, Script: []byte(del), KeysB: bargs("l"), NoForce: true}).Reply); !bytes.Contains([]byte(got), []byte("NOPERM")) {
		t.Fatalf("script DEL: %s", got)
	}
	if got := fmtReply(r.apply(&Command{Op: OpExec, Multi: [][][]byte{bargs("DEL", "l")}, NoForce: true}).Reply); !bytes.Contains([]byte(got), []byte("NOPERM")) {
		t.Fatalf("EXEC DEL: %s", got)
	}
	// A generic script given the token (redis-py's extend shape).
	ext := `local tok = redis.call('get', KEYS[1]) if tok ~= ARGV[1] then return 0 end redis.call('pexpire', KEYS[1], ARGV[2]) return 1`
	if got := fmtReply(r.apply(&Command{Op: OpEval, Script: []byte(ext), KeysB: bargs("l"), Args: bargs("tok", "20000"), NoForce: true}).Reply); got != ":1" {
		t.Fatalf("generic extend with the token: %s", got)
	}
	if got := fmtReply(r.apply(&Command{Op: OpEval, Script: []byte(`return redis.call('pexpire', KEYS[1], ARGV[1])`), KeysB: bargs("l"), Args: bargs("1"), NoForce: true}).Reply); !bytes.Contains([]byte(got), []byte("NOPERM")) {
		t.Fatalf("generic pexpire without the token: %s", got)
	}
	cad := `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`
	if got := fmtReply(r.apply(&Command{Op: OpEval, Script: []byte(cad), KeysB: bargs("l"), Args: bargs("tok"), NoForce: true}).Reply); got != ":1" {
		t.Fatalf("compare-and-delete by the owner: %s", got)
	}
}

func TestNoForceEncoding(t *testing.T) {
	c := &Command{Op: OpRedis, Args: bargs("DEL", "k"), NoForce: true}
	b, _ := c.MarshalBinary()
	d, err := DecodeCommand(b)
	if err != nil || !d.NoForce {
		t.Fatalf("round trip: %+v %v", d, err)
	}
	c.NoForce = false
	b2, _ := c.MarshalBinary()
	if d, err := DecodeCommand(b2); err != nil || d.NoForce {
		t.Fatalf("round trip without NoForce: %+v %v", d, err)
	}
}

// TestKeysOnly: with Command.KeysOnly a script touches only its KEYS;
// without it, any key (as before).
func TestKeysOnly(t *testing.T) {
	r := newRT(t)
	r.do("SET", "a", "1")
	r.do("SET", "b", "2")
	run := func(script string, keysOnly bool, keys ...string) string {
		return fmtReply(r.apply(&Command{Op: OpEval, Script: []byte(script), KeysB: bargs(keys...), KeysOnly: keysOnly}).Reply)
	}
	cases := []struct {
		script   string
		keysOnly bool
		keys     []string
		want     string // prefix
	}{
		{`return redis.call('get', 'b')`, true, []string{"a"}, "-" + errUndeclaredKey},
		{`return redis.call('mget', KEYS[1], 'b')`, true, []string{"a"}, "-" + errUndeclaredKey},
		{`return redis.call('get', KEYS[1])`, true, []string{"a"}, `"1"`},
		{`return redis.call('time')[1] ~= nil`, true, nil, ":1"},
		{`return redis.call('get', 'b')`, false, []string{"a"}, `"2"`},
	}
	for _, c := range cases {
		if got := run(c.script, c.keysOnly, c.keys...); !strings.HasPrefix(got, c.want) {
			t.Errorf("%s (keysOnly %v): %s, want %s...", c.script, c.keysOnly, got, c.want)
		}
	}
	// In MULTI too.
	got := fmtReply(r.apply(&Command{Op: OpExec, KeysOnly: true, Multi: [][][]byte{bargs("EVAL", "return redis.call('get', 'b')", "0")}}).Reply)
	if !strings.Contains(got, errUndeclaredKey) {
		t.Fatalf("EXEC: %s", got)
	}
}

// TestNoForceElectionKeys: without admin, no Redis command writes an
// election's lock, not even with the owner string GET shows (the right to
// lead is the campaign's secret token), nor a script that names the key
// without declaring it; reads still work, and an admin still forces.
func TestNoForceElectionKeys(t *testing.T) {
	const owner = "me\x00digest"
	cad := `if redis.call('get', 'election/e') == ARGV[1] then return redis.call('del', 'election/e') end return 0`
	cases := []struct {
		name    string
		cmd     *Command
		refused bool
	}{
		{"delex ifeq owner", &Command{Op: OpRedis, Args: bargs("DELEX", "election/e", "IFEQ", owner)}, true},
		{"set ifeq owner", &Command{Op: OpRedis, Args: bargs("SET", "election/e", "x", "IFEQ", owner)}, true},
		{"set nx free election key", &Command{Op: OpRedis, Args: bargs("SET", "election/f", "x", "NX")}, true},
		{"undeclared compare-and-delete", &Command{Op: OpEval, Script: []byte(cad), Args: bargs(owner)}, true},
		{"get", &Command{Op: OpRedis, Args: bargs("GET", "election/e")}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newRT(t)
			r.do("SET", "election/e", owner, "NX", "PX", "10000")
			tc.cmd.NoForce = true
			got := fmtReply(r.apply(tc.cmd).Reply)
			if strings.Contains(got, "NOPERM") != tc.refused {
				t.Fatalf("reply %s, refused want %v", got, tc.refused)
			}
			if s := fmtReply(r.do("GET", "election/e")); s != `"me\x00digest"` {
				t.Fatalf("the election's lock changed: GET %s", s)
			}
		})
	}
	r := newRT(t)
	r.do("SET", "election/e", owner, "NX", "PX", "10000")
	if got := fmtReply(r.apply(&Command{Op: OpRedis, Args: bargs("DEL", "election/e")}).Reply); got != ":1" {
		t.Fatalf("admin DEL of an election's lock: %s", got)
	}
}
