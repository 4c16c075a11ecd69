package redisbridge

import (
	"strings"
	"testing"
	"time"

	"github.com/locknode/locknode/fsm"
)

// Client-side caching on one node. The replies and pushes are compared
// with redis-server byte for byte in compat/tracking_test.go; these cover
// what a single Redis cannot show: the table's bound, a snapshot restore,
// users' key patterns, pipelined NOLOOP writes.

// invalidated reads the next frame of c and returns the keys of its
// invalidate push ("*" for a null: everything).
func invalidated(t *testing.T, c *rawConn) []string {
	t.Helper()
	v := c.read()
	if v.Type != '>' || len(v.Elems) != 2 || v.Elems[0].Str != "invalidate" {
		t.Fatalf("frame %v, want an invalidate push", v)
	}
	if v.Elems[1].Null {
		return []string{"*"}
	}
	var keys []string
	for _, e := range v.Elems[1].Elems {
		keys = append(keys, e.Str)
	}
	return keys
}

func trackingConn(t *testing.T, s *Server, opts ...string) *rawConn {
	t.Helper()
	c := dialRaw(t, s)
	if v := c.do("HELLO", "3"); v.Type != '%' {
		t.Fatalf("HELLO 3 = %v", v)
	}
	if v := c.do(append([]string{"CLIENT", "TRACKING", "ON"}, opts...)...); v.Str != "OK" {
		t.Fatalf("CLIENT TRACKING ON %v = %v", opts, v)
	}
	return c
}

func TestTrackingTableBound(t *testing.T) {
	s, _ := testServer(t, Config{TrackingTableMaxKeys: 2})
	a := trackingConn(t, s)
	for _, k := range []string{"t:1", "t:2"} {
		a.do("GET", k)
	}
	// A third key evicts one of the two, with its invalidation.
	if v := a.do("GET", "t:3"); !v.Null {
		t.Fatalf("GET t:3 = %v", v)
	}
	got := invalidated(t, a)
	if len(got) != 1 || (got[0] != "t:1" && got[0] != "t:2") {
		t.Fatalf("evicted %v, want t:1 or t:2", got)
	}
	s.trk.mu.Lock()
	n := len(s.trk.keys)
	s.trk.mu.Unlock()
	if n != 2 {
		t.Fatalf("tracking table holds %d keys, want 2", n)
	}
	// Prefixes: two fit, a third is refused and changes nothing.
	b := dialRaw(t, s)
	b.do("HELLO", "3")
	if v := b.do("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "p:", "PREFIX", "q:"); v.Str != "OK" {
		t.Fatalf("two prefixes: %v", v)
	}
	want := "ERR locknode: BCAST prefixes over the tracking table limit (2)"
	if v := b.do("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "r:"); v.Type != '-' || v.Str != want {
		t.Fatalf("third prefix: %v, want -%s", v, want)
	}
	if v := b.do("CLIENT", "TRACKINGINFO"); len(v.Elems) != 6 || len(v.Elems[5].Elems) != 2 {
		t.Fatalf("TRACKINGINFO after the refusal: %v", v)
	}
}

func TestTrackingConfig(t *testing.T) {
	if err := (Config{TrackingTableMaxKeys: -1}).Validate(); err == nil {
		t.Fatal("a negative TrackingTableMaxKeys was accepted")
	}
	if got := DefaultConfig().TrackingTableMaxKeys; got != 1000000 {
		t.Fatalf("default TrackingTableMaxKeys = %d", got)
	}
}

// TestTrackingRestore: a node that installs a snapshot has no events of
// what changed: every tracking client is told to drop everything (a null
// invalidation, as after FLUSHALL), and the table is emptied.
func TestTrackingRestore(t *testing.T) {
	s, _ := testServer(t, Config{})
	a := trackingConn(t, s)
	a.do("GET", "r:1")
	b := trackingConn(t, s, "BCAST")
	s.onApplied(99, []fsm.Event{{Kind: fsm.EvRestored}})
	for _, c := range []*rawConn{a, b} {
		if got := invalidated(t, c); len(got) != 1 || got[0] != "*" {
			t.Fatalf("after a restore: %v, want a null invalidation", got)
		}
	}
	s.trk.mu.Lock()
	n := len(s.trk.keys)
	s.trk.mu.Unlock()
	if n != 0 {
		t.Fatalf("tracking table holds %d keys after a restore", n)
	}
}

// TestTrackingBCASTKeyPatterns: a BCAST client limited to app:* is not
// told the names of keys outside its patterns.
func TestTrackingBCASTKeyPatterns(t *testing.T) {
	s, _ := usersServer(t, testUsers)
	a := dialRaw(t, s)
	if v := a.do("HELLO", "3", "AUTH", "r", "rp"); v.Type != '%' {
		t.Fatalf("HELLO 3 AUTH = %v", v)
	}
	if v := a.do("CLIENT", "TRACKING", "ON", "BCAST"); v.Str != "OK" {
		t.Fatalf("CLIENT TRACKING ON BCAST = %v", v)
	}
	root := dialRaw(t, s)
	root.do("AUTH", "root", "rootp")
	root.do("SET", "secret:1", "x")
	root.do("SET", "app:1", "x")
	if got := invalidated(t, a); len(got) != 1 || got[0] != "app:1" {
		t.Fatalf("invalidated %v, want only app:1", got)
	}
}

// TestTrackingNoLoopPipelined: NOLOOP drops the invalidations of the
// client's own pipelined writes (proposed without waiting), not those of
// other clients' writes.
func TestTrackingNoLoopPipelined(t *testing.T) {
	s, _ := testServer(t, Config{})
	a := trackingConn(t, s, "NOLOOP")
	b := dialRaw(t, s)
	a.do("GET", "n:own")
	a.do("GET", "n:other")
	var in strings.Builder
	for i := range 20 {
		in.WriteString(cmdBytes("SET", "n:own", itoa(i)))
	}
	a.send(in.String())
	for range 20 {
		if v := a.read(); v.Str != "OK" {
			t.Fatalf("pipelined SET = %v", v)
		}
	}
	b.do("SET", "n:other", "x")
	if got := invalidated(t, a); len(got) != 1 || got[0] != "n:other" {
		t.Fatalf("invalidated %v, want n:other (not the client's own n:own)", got)
	}
}

// TestTrackingClosedClientForgotten: a closed tracking connection leaves
// the node's clients and prefixes.
func TestTrackingClosedClientForgotten(t *testing.T) {
	s, _ := testServer(t, Config{})
	a := trackingConn(t, s, "BCAST", "PREFIX", "c:")
	a.nc.Close()
	eventually(t, 5*time.Second, "the closed client to leave the tracking table", func() bool {
		s.trk.mu.Lock()
		defer s.trk.mu.Unlock()
		return len(s.trk.clients) == 0 && len(s.trk.prefixes) == 0 && len(s.trk.plens) == 0 && s.trk.nprefixes == 0 && s.trk.active.Load() == 0
	})
}

// BenchmarkGetTracking is BenchmarkGet on a connection with tracking on:
// each GET remembers its key (RESP2 without redirect: no pushes).
func BenchmarkGetTracking(b *testing.B) {
	s, _ := testServer(b, Config{})
	c := dialRaw(b, s)
	c.do("SET", "k", "v")
	c.do("CLIENT", "TRACKING", "ON")
	batch := strings.Repeat(cmdBytes("GET", "k"), 100)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += 100 {
		c.send(batch)
		for j := 0; j < 100; j++ {
			c.read()
		}
	}
}
