package redisbridge

import "testing"

// TestElectionKeysGuarded: a write user may not write an election's lock
// by any Redis command, pipelined or in MULTI, whatever token it offers;
// reads pass; an admin's DEL (a forced release) is the one write allowed.
func TestElectionKeysGuarded(t *testing.T) {
	const users = `
user w on >wp ~* +@write +@read
user root on >rootp ~* &* +@all
`
	s, _ := usersServer(t, users)
	root := dialRaw(t, s)
	root.do("AUTH", "root", "rootp")
	if v := root.do("SET", "app:x", "v"); v.Str != "OK" {
		t.Fatalf("SET: %v", v)
	}
	w := dialRaw(t, s)
	w.do("AUTH", "w", "wp")
	cases := [][]string{
		{"SET", "election/e", "tok", "NX", "PX", "60000"},
		{"LOCK.ACQUIRE", "election/e", "tok", "60000"},
		{"LOCK.RELEASE", "election/e", "tok"},
		{"LOCK.EXTEND", "election/e", "tok", "60000"},
		{"DEL", "election/e"},
		{"PEXPIRE", "election/e", "1"},
		{"EVAL", "return redis.call('del', KEYS[1])", "1", "election/e"},
		{"MSET", "app:y", "1", "election/e", "2"},
	}
	for _, args := range cases {
		if v := w.do(args...); v.Str != msgElectionKey {
			t.Errorf("%v by a write user: %v, want %q", args, v, msgElectionKey)
		}
	}
	// Pipelined: refused in order, the others run.
	w.send(cmdBytes("SET", "app:1", "a") + cmdBytes("SET", "election/e", "b") + cmdBytes("SET", "app:2", "c"))
	for i, want := range []string{"OK", msgElectionKey, "OK"} {
		if v := w.read(); v.Str != want {
			t.Fatalf("pipelined reply %d: %v, want %q", i, v, want)
		}
	}
	if v := w.do("GET", "election/e"); v.Type == '-' {
		t.Fatalf("GET of an election key: %v", v)
	}
	if v := root.do("SET", "election/e", "tok"); v.Str != msgElectionKey {
		t.Fatalf("SET by an admin: %v, want %q", v, msgElectionKey)
	}
	if v := root.do("DEL", "election/e"); v.Type == '-' {
		t.Fatalf("DEL by an admin: %v", v)
	}
}
