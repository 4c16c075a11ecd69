package redisbridge

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/locknode/locknode/fsm"
	"github.com/locknode/locknode/redisbridge/resp"
)

func wantInt(t *testing.T, v resp.Value, n int64) {
	t.Helper()
	if v.Type != ':' || v.Int != n {
		t.Fatalf("got %v, want :%d", v, n)
	}
}

func wantErrPrefix(t *testing.T, v resp.Value, prefix string) {
	t.Helper()
	if v.Type != '-' || !strings.HasPrefix(v.Str, prefix) {
		t.Fatalf("got %v, want error %q...", v, prefix)
	}
}

// TestLockCommands: the native lock surface over RESP2 and RESP3.
func TestLockCommands(t *testing.T) {
	s, _ := testServer(t, Config{})
	a := dialRaw(t, s)
	b := dialRaw(t, s)
	b.do("HELLO", "3")

	v := a.do("LOCK.ACQUIRE", "res", "alice", "10000")
	if v.Type != '*' || len(v.Elems) != 2 || v.Elems[0].Int <= 0 || v.Elems[1].Int <= 0 {
		t.Fatalf("acquire: %v", v)
	}
	fence := v.Elems[0].Int
	wantErrPrefix(t, b.do("LOCK.ACQUIRE", "res", "bob", "10000"), "LOCKED ")
	// Redis commands see the lock as a string holding the owner token.
	if v := b.do("GET", "res"); v.Str != "alice" {
		t.Fatalf("GET res = %v", v)
	}
	v = a.do("LOCK.EXTEND", "res", "alice", "20000")
	if v.Type != '*' || v.Elems[0].Int != fence {
		t.Fatalf("extend: %v (fence must stay %d)", v, fence)
	}
	wantErrPrefix(t, b.do("LOCK.EXTEND", "res", "bob", "1000"), "NOTOWNER ")
	wantErrPrefix(t, b.do("LOCK.RELEASE", "res", "bob"), "NOTOWNER ")

	info := b.do("LOCK.INFO", "res")
	if info.Type != '%' {
		t.Fatalf("LOCK.INFO in RESP3: %v", info)
	}
	m := pairs(info)
	if m["kind"].Str != "lock" || m["fence"].Int != fence || len(m["holders"].Elems) != 1 {
		t.Fatalf("LOCK.INFO = %v", info)
	}
	if h := pairs(m["holders"].Elems[0]); h["owner"].Str != "alice" || h["ttl_ms"].Int <= 10000 ||
		h["granted_ms"].Int <= 0 || h["extended_ms"].Int < h["granted_ms"].Int || h["meta"].Type != '%' || len(h["meta"].Elems) != 0 {
		t.Fatalf("holder = %v", m["holders"].Elems[0])
	}

	// A blocking acquire queues in the FSM and is handed the lock when
	// alice releases it.
	got := make(chan resp.Value, 1)
	// Ends when bob's LOCK.ACQUIRE replies.
	go func() { got <- b.do("LOCK.ACQUIRE", "res", "bob", "5000", "WAIT", "10000") }()
	eventually(t, 5*time.Second, "bob to queue", func() bool {
		w := pairs(a.do("LOCK.INFO", "res"))["waiters"]
		return len(w.Elems) == 1
	})
	wantInt(t, a.do("LOCK.RELEASE", "res", "alice"), 1)
	var bobs resp.Value
	select {
	case bobs = <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("bob was not handed the lock")
	}
	bm := pairs(bobs)
	if bobs.Type != '%' || bm["fence"].Int <= fence {
		t.Fatalf("bob's grant %v: fence must exceed %d", bobs, fence)
	}
	wantErrPrefix(t, a.do("LOCK.RELEASE", "res", "alice"), "NOTOWNER ")
	wantInt(t, b.do("LOCK.RELEASE", "res", "bob"), 1)
	wantInt(t, b.do("LOCK.RELEASE", "res", "bob"), 0)

	// Fences: CheckAndAdvance.
	bf := bm["fence"].Int
	v = a.do("FENCE.CHECK", "storage", itoa(int(bf)))
	if v.Elems[0].Int != 1 || v.Elems[1].Int != bf {
		t.Fatalf("fence check: %v", v)
	}
	v = a.do("FENCE.CHECK", "storage", itoa(int(fence)))
	if v.Elems[0].Int != 0 || v.Elems[1].Int != bf {
		t.Fatalf("stale fence check: %v", v)
	}

	// Options and errors.
	wantErrPrefix(t, a.do("LOCK.ACQUIRE", "x", "o", "abc"), "ERR value is not an integer or out of range")
	wantErrPrefix(t, a.do("LOCK.ACQUIRE", "x", "o", "100", "MODE", "weird"), `ERR bad request (unknown mode "weird": want exclusive`)
	wantErrPrefix(t, a.do("LOCK.ACQUIRE", "x", "o", "100", "WAIT"), "ERR syntax error")
	wantErrPrefix(t, a.do("LOCK.ACQUIRE", "x", "o", "100", "BOGUS", "1"), "ERR syntax error")
	wantErrPrefix(t, a.do("LOCK.ACQUIRE", "x"), "ERR wrong number of arguments for 'lock.acquire' command")
	if v := a.do("LOCK.INFO", "nothing"); !v.Null {
		t.Fatalf("LOCK.INFO of nothing = %v", v)
	}
	// Semaphore with 2 permits.
	a.do("LOCK.ACQUIRE", "sem", "p1", "10000", "MODE", "semaphore", "PERMITS", "2")
	if v := a.do("LOCK.ACQUIRE", "sem", "p2", "10000", "MODE", "semaphore", "PERMITS", "2"); v.Type != '*' {
		t.Fatalf("second permit: %v", v)
	}
	wantErrPrefix(t, a.do("LOCK.ACQUIRE", "sem", "p3", "10000", "MODE", "semaphore", "PERMITS", "2"), "LOCKED ")
	// Reentrant: two acquires need two releases.
	a.do("LOCK.ACQUIRE", "re", "o", "10000", "REENTRANT")
	a.do("LOCK.ACQUIRE", "re", "o", "10000", "REENTRANT")
	wantInt(t, a.do("LOCK.RELEASE", "re", "o", "REENTRANT"), 0)
	wantInt(t, a.do("LOCK.RELEASE", "re", "o", "REENTRANT"), 1)
	// A blocking acquire that times out.
	a.do("LOCK.ACQUIRE", "busy", "o", "10000")
	wantErrPrefix(t, b.do("LOCK.ACQUIRE", "busy", "p", "1000", "WAIT", "50"), "TIMEOUT ")
}

// pairs turns a map reply (or a RESP2 flat array of pairs) into a Go map.
func pairs(v resp.Value) map[string]resp.Value {
	m := map[string]resp.Value{}
	for i := 0; i+1 < len(v.Elems); i += 2 {
		m[v.Elems[i].Str] = v.Elems[i+1]
	}
	return m
}

// TestNoLeader: without a reachable leader every command that needs the
// log or a linearizable read fails with TRYAGAIN; nothing is answered
// from possibly stale state. Handshake commands still work.
func TestNoLeader(t *testing.T) {
	s, f := testServer(t, Config{})
	c := dialRaw(t, s)
	c.do("SET", "k", "v")
	f.noLeader.Store(true)
	for _, args := range [][]string{
		{"GET", "k"}, {"SET", "k", "w"}, {"EVAL", "return 1", "0"}, {"LOCK.ACQUIRE", "l", "o", "100"},
		{"WATCH", "k"}, {"PUBLISH", "c", "m"}, {"SCRIPT", "LOAD", "return 2"},
	} {
		v := c.do(args...)
		wantErrPrefix(t, v, "TRYAGAIN ")
	}
	if v := c.do("PING"); v.Str != "PONG" {
		t.Fatalf("PING without leader: %v", v)
	}
	f.noLeader.Store(false)
	if v := c.do("GET", "k"); v.Str != "v" {
		t.Fatalf("GET after recovery = %v", v)
	}
}

// TestCloseFinishesInFlight: Close cancels a blocked LOCK.ACQUIRE (the
// client gets an error reply, not a dropped connection), closes idle
// connections and returns.
func TestCloseFinishesInFlight(t *testing.T) {
	f := newFakeBackend(t)
	s, err := New(f, Config{})
	if err != nil {
		t.Fatal(err)
	}
	ln := listenLocal(t)
	served := make(chan error, 1)
	// Ends when Close closes the listener.
	go func() { served <- s.Serve(ln) }()
	eventually(t, 5*time.Second, "listener", func() bool { return s.Addr() == ln.Addr().String() })
	holder := dialRaw(t, s)
	holder.do("LOCK.ACQUIRE", "l", "a", "60000")
	idle := dialRaw(t, s)
	idle.do("PING")
	waiter := dialRaw(t, s)
	waiter.send(cmdBytes("LOCK.ACQUIRE", "l", "b", "1000", "WAIT", "60000"))
	eventually(t, 5*time.Second, "waiter to queue", func() bool {
		return len(pairs(holder.do("LOCK.INFO", "l"))["waiters"].Elems) == 1
	})
	closed := make(chan struct{})
	// Ends when Close returns.
	go func() { s.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return")
	}
	if err := <-served; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	wantErrPrefix(t, waiter.read(), "TRYAGAIN ")
	if out := idle.readRaw(time.Second); out != "" {
		t.Fatalf("idle connection got %q", out)
	}
	// The cancelled waiter left the queue through the log.
	ctx := context.Background()
	info, err := f.Inspect(ctx, "l", apiReadOptions())
	if err != nil || len(info.Waiters) != 0 {
		t.Fatalf("after Close: %+v %v", info, err)
	}
}

// slowBackend delays Apply until released, to hold a command in flight.
type slowBackend struct {
	*fakeBackend
	entered chan struct{}
	release chan struct{}
}

func (b *slowBackend) Apply(ctx context.Context, cmd *fsm.Command) (fsm.Result, error) {
	if cmd.Op == fsm.OpRedis && string(cmd.Args[0]) == "SET" {
		close(b.entered)
		<-b.release
	}
	return b.fakeBackend.Apply(ctx, cmd)
}

// TestCloseLetsInFlightFinish: a write in flight when Close starts still
// commits and its client gets the real reply.
func TestCloseLetsInFlightFinish(t *testing.T) {
	b := &slowBackend{fakeBackend: newFakeBackend(t), entered: make(chan struct{}), release: make(chan struct{})}
	s, err := New(b, Config{})
	if err != nil {
		t.Fatal(err)
	}
	ln := listenLocal(t)
	// Ends when Close closes the listener.
	go s.Serve(ln)
	eventually(t, 5*time.Second, "listener", func() bool { return s.Addr() == ln.Addr().String() })
	c := dialRaw(t, s)
	c.send(cmdBytes("SET", "k", "v"))
	<-b.entered
	closed := make(chan struct{})
	// Ends when Close returns.
	go func() { s.Close(); close(closed) }()
	select {
	case <-closed:
		t.Fatal("Close returned with a command in flight")
	case <-time.After(50 * time.Millisecond): // Close must still be waiting
	}
	close(b.release)
	if v := c.read(); v.Str != "OK" {
		t.Fatalf("in-flight SET replied %v", v)
	}
	<-closed
	if out := c.readRaw(time.Second); out != "" {
		t.Fatalf("after the reply: %q", out)
	}
}

// TestHangupCancelsWait: a client that disconnects while blocked in
// LOCK.ACQUIRE ... WAIT leaves the queue, so the lock is never granted to
// a client that is gone; a pipelined command behind a blocking one still
// runs afterwards.
func TestHangupCancelsWait(t *testing.T) {
	s, _ := testServer(t, Config{IdleTimeout: time.Minute})
	holder := dialRaw(t, s)
	holder.do("LOCK.ACQUIRE", "l", "a", "60000")
	gone := dialRaw(t, s)
	gone.send(cmdBytes("LOCK.ACQUIRE", "l", "b", "1000", "WAIT", "60000"))
	waiters := func() int { return len(pairs(holder.do("LOCK.INFO", "l"))["waiters"].Elems) }
	eventually(t, 5*time.Second, "waiter queued", func() bool { return waiters() == 1 })
	gone.nc.Close()
	eventually(t, 5*time.Second, "waiter removed after hang-up", func() bool { return waiters() == 0 })

	// Pipelined: the second command waits behind the blocking one.
	p := dialRaw(t, s)
	p.send(cmdBytes("LOCK.ACQUIRE", "l", "c", "1000", "WAIT", "60000") + cmdBytes("PING"))
	eventually(t, 5*time.Second, "pipelined waiter queued", func() bool { return waiters() == 1 })
	wantInt(t, holder.do("LOCK.RELEASE", "l", "a"), 1)
	if v := p.read(); v.Type != '*' {
		t.Fatalf("pipelined acquire: %v", v)
	}
	if v := p.read(); v.Str != "PONG" {
		t.Fatalf("pipelined PING: %v", v)
	}
}

// TestClosePartialCommand: Close does not wait for a client that sent
// half a command.
func TestClosePartialCommand(t *testing.T) {
	f := newFakeBackend(t)
	s, err := New(f, Config{})
	if err != nil {
		t.Fatal(err)
	}
	ln := listenLocal(t)
	// Ends when Close closes the listener.
	go s.Serve(ln)
	eventually(t, 5*time.Second, "listener", func() bool { return s.Addr() == ln.Addr().String() })
	c := dialRaw(t, s)
	c.send("PING\r\n*2\r\n$3\r\nGET")
	if v := c.read(); v.Str != "PONG" {
		t.Fatalf("PING: %v", v)
	}
	closed := make(chan struct{})
	// Ends when Close returns.
	go func() { s.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close waits for a half-sent command")
	}
}

// TestLockMeta: LOCK.ACQUIRE's META pairs are kept with the hold or the
// waiter and come back from LOCK.INFO (RESP2: flat name, value pairs in
// name order) with the grant, extend and queue times; a SET NX lock has
// a grant time and no metadata; metadata past the limits is refused.
func TestLockMeta(t *testing.T) {
	s, _ := testServer(t, Config{})
	a := dialRaw(t, s)
	v := a.do("LOCK.ACQUIRE", "res", "alice", "10000", "META", "pid", "7", "META", "host", "h1")
	if v.Type != '*' {
		t.Fatalf("acquire: %v", v)
	}
	bobs := make(chan resp.Value, 1)
	c := dialRaw(t, s)
	// Ends when alice releases (below) or the wait ends.
	go func() { bobs <- c.do("LOCK.ACQUIRE", "res", "bob", "10000", "WAIT", "10000", "META", "host", "h2") }()
	b := dialRaw(t, s)
	eventually(t, 5*time.Second, "bob to queue", func() bool {
		return len(pairs(b.do("LOCK.INFO", "res"))["waiters"].Elems) == 1
	})
	m := pairs(b.do("LOCK.INFO", "res"))
	h := pairs(m["holders"].Elems[0])
	if meta := h["meta"]; meta.Type != '*' || len(meta.Elems) != 4 || meta.Elems[0].Str != "host" || meta.Elems[1].Str != "h1" ||
		meta.Elems[2].Str != "pid" || meta.Elems[3].Str != "7" {
		t.Fatalf("holder meta = %v", meta)
	}
	if h["granted_ms"].Int <= 0 || h["extended_ms"].Int != 0 {
		t.Fatalf("holder = %v", m["holders"].Elems[0])
	}
	w := pairs(m["waiters"].Elems[0])
	if wm := pairs(w["meta"]); wm["host"].Str != "h2" || w["queued_ms"].Int < h["granted_ms"].Int {
		t.Fatalf("waiter = %v", m["waiters"].Elems[0])
	}

	b.do("SET", "redlock", "tok", "NX", "PX", "10000")
	r := pairs(pairs(b.do("LOCK.INFO", "redlock"))["holders"].Elems[0])
	if r["owner"].Str != "tok" || r["granted_ms"].Int <= 0 || len(r["meta"].Elems) != 0 {
		t.Fatalf("SET NX holder = %v", r)
	}

	wantErrPrefix(t, b.do("LOCK.ACQUIRE", "k", "o", "1000", "META", "host"), "ERR syntax")
	wantErrPrefix(t, b.do("LOCK.ACQUIRE", "k", "o", "1000", "META", "host", strings.Repeat("x", 257)), "LIMIT ")
	wantErrPrefix(t, b.do("LOCK.ACQUIRE", "k", "o", "1000", "META", "", "x"), "ERR bad request")
	if v := b.do("LOCK.INFO", "k"); !v.Null {
		t.Fatalf("a refused acquire left %v", v)
	}

	wantInt(t, a.do("LOCK.RELEASE", "res", "alice"), 1)
	if v := <-bobs; v.Type != '*' {
		t.Fatalf("bob's acquire: %v", v)
	}
	h = pairs(pairs(b.do("LOCK.INFO", "res"))["holders"].Elems[0])
	if h["owner"].Str != "bob" || pairs(h["meta"])["host"].Str != "h2" {
		t.Fatalf("after hand-off: %v", h)
	}
}
