package redisbridge

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/cluster"
	"github.com/locknode/locknode/fsm"
	"github.com/locknode/locknode/redisbridge/resp"
)

// TestNotifyFlags: parsing and CONFIG GET's spelling of
// notify-keyspace-events, as redis-server 7.0 answers.
func TestNotifyFlags(t *testing.T) {
	for _, tc := range []struct{ in, out string }{
		{"", ""},
		{"A", "A"},
		{"KEA", "AKE"},
		{"AKE", "AKE"},
		{"gx$lshzxetmdn", "Am"},
		{"nKEA", "AKE"}, // n is kept but not shown next to A, as Redis 7.0
		{"KEn", "nKE"},
		{"Kmt", "tKm"},
		{"xg", "gx"},
		{"$lshzxetd", "$lshzxetd"},
		{"AAA", "A"},
		{"ggK", "gK"},
		{"K", "K"},
	} {
		f, ok := parseNotifyFlags(tc.in)
		if !ok || f.String() != tc.out {
			t.Errorf("%q: %q (ok %v), want %q", tc.in, f.String(), ok, tc.out)
		}
	}
	for _, bad := range []string{"Kq", "K E", "a", "KEA\x00"} {
		if _, ok := parseNotifyFlags(bad); ok {
			t.Errorf("%q accepted", bad)
		}
	}
	if f, _ := parseNotifyFlags("KEAn"); f&notifyNew == 0 {
		t.Error("KEAn lost n")
	}
	if err := (Config{NotifyKeyspaceEvents: "KEq"}).Validate(); err == nil {
		t.Error("Config with a bad NotifyKeyspaceEvents validated")
	}
}

// TestConfigSetNotify: CONFIG SET notify-keyspace-events takes Redis'
// letters; a refused one (bad letter, duplicate, bad pair) changes
// nothing, with Redis' error text.
func TestConfigSetNotify(t *testing.T) {
	s, _ := testServer(t, Config{NotifyKeyspaceEvents: "Ex"})
	c := dialRaw(t, s)
	get := func() string {
		t.Helper()
		v := c.do("CONFIG", "GET", "notify-keyspace-events")
		if len(v.Elems) != 2 {
			t.Fatalf("CONFIG GET: %v", v)
		}
		return v.Elems[1].Str
	}
	if g := get(); g != "xE" {
		t.Fatalf("from Config: %q, want xE", g)
	}
	for _, tc := range []struct {
		args []string
		err  string
	}{
		{[]string{"CONFIG", "SET", "notify-keyspace-events", "Kq"}, msgNotifyFlags},
		{[]string{"CONFIG", "SET", "notify-keyspace-events", "KEA", "slowlog-max-len", "x"}, "ERR CONFIG SET failed (possibly related to argument 'slowlog-max-len')"},
		{[]string{"CONFIG", "SET", "notify-keyspace-events", "KEA", "NOTIFY-KEYSPACE-EVENTS", "K"}, "ERR CONFIG SET failed (possibly related to argument 'notify-keyspace-events') - duplicate parameter"},
		{[]string{"CONFIG", "SET", "notify-keyspace-events", "KEA", "x"}, "ERR syntax error"},
		{[]string{"CONFIG", "SET", "notify-keyspace-events"}, "ERR wrong number of arguments for 'config|set' command"},
	} {
		v := c.do(tc.args...)
		if v.Type != '-' || !strings.HasPrefix(v.Str, tc.err) {
			t.Errorf("%q: %v, want error %q", tc.args, v, tc.err)
		}
		if g := get(); g != "xE" {
			t.Fatalf("%q changed the flags to %q", tc.args, g)
		}
	}
	if v := c.do("CONFIG", "SET", "Notify-Keyspace-Events", "KEA"); v.Str != "OK" {
		t.Fatalf("CONFIG SET: %v", v)
	}
	if g := get(); g != "AKE" {
		t.Fatalf("after KEA: %q", g)
	}
	if v := c.do("CONFIG", "GET", "*keyspace*"); len(v.Elems) != 2 || v.Elems[1].Str != "AKE" {
		t.Fatalf("CONFIG GET by pattern: %v", v)
	}
}

// recv reads one pub/sub message (RESP2 array or RESP3 push) and renders
// it as "kind channel message" (pmessage: "pmessage pattern channel
// message").
func recv(t *testing.T, c *rawConn) string {
	t.Helper()
	v := c.read()
	if v.Type != '*' && v.Type != '>' {
		t.Fatalf("not a message: %v", v)
	}
	parts := make([]string, len(v.Elems))
	for i, e := range v.Elems {
		parts[i] = e.Str
	}
	return strings.Join(parts, " ")
}

// TestKeyspaceNotifications: with K and E the two messages of each event,
// keyspace first; the classes select events; without K or E nothing is
// sent; lock holds taken through the lock API are set/expire/del/expired.
func TestKeyspaceNotifications(t *testing.T) {
	s, b := testServer(t, Config{})
	sub, w := dialRaw(t, s), dialRaw(t, s)
	w.do("CONFIG", "SET", "notify-keyspace-events", "KE$gx")
	if v := sub.do("PSUBSCRIBE", "__key*__:*"); v.Type == '-' {
		t.Fatal(v)
	}
	w.do("SET", "k", "v")
	for _, want := range []string{
		"pmessage __key*__:* __keyspace@0__:k set",
		"pmessage __key*__:* __keyevent@0__:set k",
	} {
		if got := recv(t, sub); got != want {
			t.Fatalf("got %q, want %q", got, want)
		}
	}
	// h is not selected: HSET sends nothing; DEL (g) does.
	w.do("HSET", "h", "f", "1")
	w.do("DEL", "h")
	for _, want := range []string{"__keyspace@0__:h del", "__keyevent@0__:del h"} {
		if got := recv(t, sub); !strings.HasSuffix(got, want) {
			t.Fatalf("got %q, want ...%q", got, want)
		}
	}

	ctx := context.Background()
	if _, err := b.Acquire(ctx, api.AcquireRequest{Key: "lk", Owner: "o1", TTLMs: 60000}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Release(ctx, api.ReleaseRequest{Key: "lk", Owner: "o1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Acquire(ctx, api.AcquireRequest{Key: "lk", Owner: "o2", TTLMs: 200}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"set", "expire", "del", "set", "expire", "expired"} {
		got := recv(t, sub)
		if got != "pmessage __key*__:* __keyspace@0__:lk "+want {
			t.Fatalf("got %q, want keyspace %q", got, want)
		}
		if got := recv(t, sub); got != "pmessage __key*__:* __keyevent@0__:"+want+" lk" {
			t.Fatalf("got %q, want keyevent %q", got, want)
		}
	}

	// Without K and E nothing is sent, whatever the classes.
	w.do("CONFIG", "SET", "notify-keyspace-events", "A")
	w.do("SET", "k", "v2")
	w.do("CONFIG", "SET", "notify-keyspace-events", "E$")
	w.do("SET", "k", "v3")
	if got := recv(t, sub); got != "pmessage __key*__:* __keyevent@0__:set k" {
		t.Fatalf("after A then E$: %q", got)
	}
	if raw := sub.readRaw(200 * time.Millisecond); raw != "" {
		t.Fatalf("unexpected %q", raw)
	}
}

// TestKeyspaceNotificationsACL: the channels obey the user's channel
// rules as PUBLISH's do.
func TestKeyspaceNotificationsACL(t *testing.T) {
	s, _ := usersServer(t, "user root on >rootp ~* &* +@all\nuser ks on >ksp ~app:* &__keyevent@0__:* +@all\n")
	root, ks := dialRaw(t, s), dialRaw(t, s)
	root.do("AUTH", "root", "rootp")
	ks.do("AUTH", "ks", "ksp")
	root.do("CONFIG", "SET", "notify-keyspace-events", "KEA")
	if v := ks.do("SUBSCRIBE", "__keyspace@0__:app:x"); v.Type != '-' || !strings.HasPrefix(v.Str, "NOPERM") {
		t.Fatalf("keyspace channel outside the user's: %v", v)
	}
	if v := ks.do("SUBSCRIBE", "__keyevent@0__:del"); v.Type == '-' {
		t.Fatal(v)
	}
	root.do("SET", "app:x", "1")
	root.do("DEL", "app:x")
	if got := recv(t, ks); got != "message __keyevent@0__:del app:x" {
		t.Fatalf("got %q", got)
	}
}

// TestKeyspaceSlowSubscriber: a subscriber that does not read is
// disconnected at the pub/sub output limit; the writes that produce its
// events are never held up by it.
func TestKeyspaceSlowSubscriber(t *testing.T) {
	s, _ := testServer(t, Config{MaxPendingPushes: 10, WriteTimeout: 50 * time.Millisecond, NotifyKeyspaceEvents: "KEA"})
	slow := dialRaw(t, s)
	slow.do("PSUBSCRIBE", "__key*")
	w := goRedis(t, s, 3)
	ctx := context.Background()
	// Each MSET of 400 keys of 400 bytes queues 1600 messages (about
	// 700 KiB) for the subscriber: far past its socket buffers.
	args := make([]any, 0, 800)
	for i := range 400 {
		args = append(args, fmt.Sprintf("%0400d", i), "v")
	}
	done := make(chan error, 1)
	// Ends after its writes; each returns although the subscriber never reads.
	go func() {
		for range 100 {
			if err := w.MSet(ctx, args...).Err(); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("SET blocked behind a slow keyspace subscriber")
	}
	eventually(t, 5*time.Second, "slow subscriber to be dropped", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.conns) == 1
	})
}

// TestClusterKeyspaceSubscriberOnFollower: a subscriber on a follower
// sees, within a bounded time, a hold granted on the leader through the
// lock API, its release, its expiry and a forced release; the follower's
// bridge publishes the events of the entries it applies.
func TestClusterKeyspaceSubscriberOnFollower(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a raft cluster")
	}
	nodes := startBridgeClusterWith(t, 3, func(cfg *cluster.Config) {
		// Events reach the follower because its subscribers ask for
		// each commit at once, not through a heartbeat's commit index.
		cfg.CommitTimeout = time.Hour
	})
	leader, follower := leaderAndFollower(t, nodes)
	sub := dialRaw(t, follower.srv)
	sub.do("CONFIG", "SET", "notify-keyspace-events", "Kgx$")
	if v := sub.do("SUBSCRIBE", "__keyspace@0__:job"); v.Type == '-' {
		t.Fatal(v)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// The bound: each event within this long of the call that caused it
	// (of the lease's end, for an expiry).
	const bound = 5 * time.Second
	expect := func(since time.Time, want ...string) {
		t.Helper()
		for _, w := range want {
			sub.nc.SetReadDeadline(since.Add(bound))
			v, err := resp.ReadValue(sub.br)
			if err != nil {
				t.Fatalf("waiting for %q: %v", w, err)
			}
			if got := fmt.Sprint(strs(v)); got != "[message __keyspace@0__:job "+w+"]" {
				t.Fatalf("got %s, want %q", got, w)
			}
		}
		t.Logf("%v within %v", want, time.Since(since))
	}
	acquire := func(owner string, ttl int64) {
		t.Helper()
		if _, err := leader.node.Acquire(ctx, api.AcquireRequest{Key: "job", Owner: owner, TTLMs: ttl}); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	acquire("a", 60000)
	expect(start, "set", "expire")
	start = time.Now()
	if _, err := leader.node.Release(ctx, api.ReleaseRequest{Key: "job", Owner: "a"}); err != nil {
		t.Fatal(err)
	}
	expect(start, "del")
	start = time.Now()
	acquire("b", 300)
	expect(start, "set", "expire", "expired")
	start = time.Now()
	acquire("c", 60000)
	if _, err := leader.node.Release(ctx, api.ReleaseRequest{Key: "job", Force: true}); err != nil {
		t.Fatal(err)
	}
	expect(start, "set", "expire", "del")
}

// TestKeyspaceEventsOnDemand: the backend's entries carry keyspace events
// only while the bridge's flags select some (K or E and a class), and no
// longer once the server is closed.
func TestKeyspaceEventsOnDemand(t *testing.T) {
	s, b := testServer(t, Config{})
	c := dialRaw(t, s)
	ctx := context.Background()
	has := func() bool {
		t.Helper()
		r, err := b.Apply(ctx, &fsm.Command{Op: fsm.OpRedis, Args: [][]byte{[]byte("SET"), []byte("k"), []byte("v")}})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range r.Events {
			if e.Kind == fsm.EvKeyspace {
				return true
			}
		}
		return false
	}
	for _, tc := range []struct {
		flags string
		want  bool
	}{{"", false}, {"KEA", true}, {"A", false}, {"Em", false}, {"E$", true}, {"", false}, {"Kx", true}} {
		c.do("CONFIG", "SET", "notify-keyspace-events", tc.flags)
		if got := has(); got != tc.want {
			t.Errorf("flags %q: events %v, want %v", tc.flags, got, tc.want)
		}
	}
	s.Close()
	if has() {
		t.Error("events after Close")
	}
}
