package mirror

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locknode/locknode/fsm"
)

// Test scaffolding for the mirror: a real redis-server, and fake
// Sources over in-process tables that apply one shared log.

// mirrorRedisProc is a redis-server on a free loopback port, without
// persistence, so a restart loses every key.
type mirrorRedisProc struct {
	t    testing.TB
	port int
	cmd  *exec.Cmd
	done chan struct{}
}

func startMirrorRedis(t testing.TB) *mirrorRedisProc {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		if os.Getenv("LOCKNODE_CI") == "1" {
			t.Fatalf("redis-server not found (LOCKNODE_CI=1): %v", err)
		}
		t.Skip("redis-server not installed")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	r := &mirrorRedisProc{t: t, port: port}
	r.start()
	t.Cleanup(r.stop)
	return r
}

func (r *mirrorRedisProc) addr() string { return "127.0.0.1:" + strconv.Itoa(r.port) }

// start runs redis-server and waits until it answers PING.
func (r *mirrorRedisProc) start() {
	r.t.Helper()
	r.cmd = exec.Command("redis-server", "--port", strconv.Itoa(r.port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--protected-mode", "no", "--loglevel", "warning")
	if err := r.cmd.Start(); err != nil {
		r.t.Fatalf("start redis-server: %v", err)
	}
	r.done = make(chan struct{})
	cmd, done := r.cmd, r.done
	// Ends when redis-server exits (stop kills it).
	go func() { _ = cmd.Wait(); close(done) }()
	c := redis.NewClient(&redis.Options{Addr: r.addr(), MaxRetries: -1})
	defer c.Close()
	mirrorWait(r.t, 10*time.Second, "redis-server to answer PING", func() (bool, string) {
		err := c.Ping(context.Background()).Err()
		return err == nil, fmt.Sprint(err)
	})
}

// stop kills redis-server and waits for it to exit.
func (r *mirrorRedisProc) stop() {
	if r.cmd == nil {
		return
	}
	_ = r.cmd.Process.Kill()
	<-r.done
	r.cmd = nil
}

// client returns a plain client to inspect or disturb the mirror's Redis.
func (r *mirrorRedisProc) client(t testing.TB) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: r.addr(), MaxRetries: -1})
	t.Cleanup(func() { c.Close() })
	return c
}

// mirrorWait polls cond until it holds or timeout passes. Polling a
// condition with a deadline, not sleeping for a guessed duration.
func mirrorWait(t testing.TB, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last string
	for {
		ok, detail := cond()
		if ok {
			return
		}
		last = detail
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s: %s", timeout, what, last)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// mirrorLog is a replicated log applied to every node's table in order, as
// raft would. A node added later catches up from the start before it
// serves (like a node restored from a snapshot).
type mirrorLog struct {
	mu    sync.Mutex
	start time.Time
	cmds  []*fsm.Command
	nodes []*mirrorNode
}

// leaderMirrorSetup starts a redis-server and a fake source that leads:
// the set-up most mirror tests share.
func leaderMirrorSetup(t testing.TB) (*mirrorRedisProc, *redis.Client, *mirrorLog, *mirrorNode) {
	t.Helper()
	r := startMirrorRedis(t)
	log := newMirrorLog()
	n := log.node()
	n.leader.Store(true)
	return r, r.client(t), log, n
}

func newMirrorLog() *mirrorLog { return &mirrorLog{start: time.Now()} }

// now is the cluster clock: ms since the log started, from a monotonic
// clock, offset so it is never 0.
func (l *mirrorLog) now() int64 { return time.Since(l.start).Milliseconds() + 1000 }

// mirrorNode is one node: its table, its subscribers and its leader flag.
type mirrorNode struct {
	log     *mirrorLog
	mu      sync.Mutex // guards t and subs; held while applying
	t       *fsm.Table
	subs    map[int]func(uint64, []fsm.Event)
	nextSub int
	leader  atomic.Bool
	readErr atomic.Bool // Read fails (a node shutting down)
}

func (l *mirrorLog) node() *mirrorNode {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := &mirrorNode{log: l, t: fsm.New(fsm.Config{}), subs: map[int]func(uint64, []fsm.Event){}}
	l.nodes = append(l.nodes, n)
	n.catchUp(l.cmds)
	return n
}

// apply appends cmd (stamped with the cluster clock) and applies it on
// every node; it returns the result on the first node.
func (l *mirrorLog) apply(cmd *fsm.Command) fsm.Result {
	l.mu.Lock()
	defer l.mu.Unlock()
	cmd.Time = l.now()
	l.cmds = append(l.cmds, cmd)
	var first fsm.Result
	for i, n := range l.nodes {
		r := n.catchUp(l.cmds)
		if i == 0 {
			first = r
		}
	}
	return first
}

// catchUp applies every entry the node has not applied; log indexes start
// at 1. It returns the last result.
func (n *mirrorNode) catchUp(cmds []*fsm.Command) fsm.Result {
	n.mu.Lock()
	defer n.mu.Unlock()
	var r fsm.Result
	for i := n.t.AppliedIndex(); i < uint64(len(cmds)); i++ {
		c := *cmds[i]
		r = n.t.Apply(i+1, &c)
		for _, fn := range n.subs {
			fn(i+1, r.Events)
		}
	}
	return r
}

func (n *mirrorNode) Read(ctx context.Context, stale bool, fn func(t *fsm.Table, now int64)) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if n.readErr.Load() {
		return fmt.Errorf("fake node: closed")
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	fn(n.t, n.log.now())
	return nil
}

func (n *mirrorNode) Subscribe(fn func(uint64, []fsm.Event)) func() {
	n.mu.Lock()
	defer n.mu.Unlock()
	id := n.nextSub
	n.nextSub++
	n.subs[id] = fn
	return func() {
		n.mu.Lock()
		delete(n.subs, id)
		n.mu.Unlock()
	}
}

func (n *mirrorNode) IsLeader() bool { return n.leader.Load() }

// Lock operations through the log.

func (l *mirrorLog) acquire(t testing.TB, key, owner string, ttl int64) fsm.Result {
	t.Helper()
	r := l.apply(&fsm.Command{Op: fsm.OpAcquire, Key: key, Owner: owner, TTL: ttl})
	if r.Err != nil || !r.Granted {
		t.Fatalf("acquire %s by %s: granted=%v err=%v", key, owner, r.Granted, r.Err)
	}
	return r
}

func (l *mirrorLog) release(t testing.TB, key, owner string) {
	t.Helper()
	r := l.apply(&fsm.Command{Op: fsm.OpRelease, Key: key, Owner: owner})
	if r.Err != nil || !r.Released {
		t.Fatalf("release %s by %s: released=%v err=%v", key, owner, r.Released, r.Err)
	}
}

// runMirror starts a mirror of n into the Redis at addr; it stops at
// cleanup.
func runMirror(t testing.TB, n Source, addr string, edit func(*Config)) *Mirror {
	t.Helper()
	m := newTestMirror(t, n, addr, edit)
	startMirror(t, m)
	return m
}

// newTestMirror builds a mirror with test timings (fast ticks and
// back-off); edit may change the config.
func newTestMirror(t testing.TB, n Source, addr string, edit func(*Config)) *Mirror {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Redis = &redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: 500 * time.Millisecond}
	cfg.CheckInterval = 20 * time.Millisecond
	cfg.MinBackoff = 5 * time.Millisecond
	cfg.MaxBackoff = 50 * time.Millisecond
	cfg.OpTimeout = 2 * time.Second
	if edit != nil {
		edit(&cfg)
	}
	m, err := New(cfg, n)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return m
}

// startMirror runs m until cleanup.
func startMirror(t testing.TB, m *Mirror) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	// Ends when the cleanup cancels ctx.
	go func() { done <- m.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Mirror.Run: %v", err)
		}
	})
}

// mirrorMismatch compares Redis with node n's table under cfg's prefix and
// filter: every held lock must be GET = first holder with a PTTL within
// its remaining lease and a meta hash with its fence; no other mirrored
// key may exist. It returns "" when they agree. pxSlack is how far (ms)
// the PTTL may exceed the lease left: the writer and this check read the
// cluster clock at different times, through estimates that differ by up
// to a commit latency or an election on a real cluster.
func mirrorMismatch(ctx context.Context, c *redis.Client, n Source, prefix, filter string, pxSlack int64) string {
	var want []lockState
	var at uint64
	_ = n.Read(ctx, true, func(t *fsm.Table, now int64) { want, at = readAll(t, now, filter) })
	rd := &mirrorRedis{c: c, prefix: prefix, filter: filter, timeout: time.Second}
	keep := map[string]struct{}{}
	var problems []string
	for _, s := range want {
		keep[s.key] = struct{}{}
		got, err := c.Get(ctx, prefix+s.key).Result()
		if err != nil || got != s.holders[0] {
			problems = append(problems, fmt.Sprintf("%s: GET=%q (%v), want %q", s.key, got, err, s.holders[0]))
			continue
		}
		pttl, _ := c.PTTL(ctx, prefix+s.key).Result()
		if pttl <= 0 || pttl.Milliseconds() > s.px+pxSlack {
			problems = append(problems, fmt.Sprintf("%s: PTTL=%v, lease left %dms", s.key, pttl, s.px))
		}
		fence, _ := c.HGet(ctx, rd.metaKey(s.key), "fence").Result()
		if fence != strconv.FormatUint(s.fence, 10) {
			problems = append(problems, fmt.Sprintf("%s: meta fence=%q, want %d", s.key, fence, s.fence))
		}
	}
	extra, err := rd.stale(ctx, keep)
	if err != nil {
		problems = append(problems, "scan: "+err.Error())
	}
	if len(extra) > 0 {
		problems = append(problems, fmt.Sprintf("stale keys in redis: %v", extra))
	}
	if len(problems) == 0 {
		return ""
	}
	return fmt.Sprintf("table@%d: %s", at, strings.Join(problems, "; "))
}

// waitMirrored waits until Redis agrees with n and m reports no lag.
func waitMirrored(t testing.TB, c *redis.Client, m *Mirror, n Source, prefix, filter string) {
	t.Helper()
	waitMirroredSlack(t, c, m, n, prefix, filter, 50)
}

func waitMirroredSlack(t testing.TB, c *redis.Client, m *Mirror, n Source, prefix, filter string, pxSlack int64) {
	t.Helper()
	ctx := context.Background()
	mirrorWait(t, 30*time.Second, "redis to match the table", func() (bool, string) {
		st := m.Status()
		if !st.Writing || !st.Synced || st.LagEntries != 0 {
			return false, fmt.Sprintf("status %+v", st)
		}
		d := mirrorMismatch(ctx, c, n, prefix, filter, pxSlack)
		return d == "", d
	})
}
