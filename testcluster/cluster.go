package testcluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/cluster"
	"github.com/locknode/locknode/fsm"
	"github.com/locknode/locknode/internal/simdisk"
	"github.com/locknode/locknode/redisbridge"
	"github.com/locknode/locknode/server"
	"github.com/locknode/locknode/transport"
)

// Options configure a Cluster. The zero value is a usable default.
type Options struct {
	// Config, when set, adjusts node i's cluster.Config before it starts
	// (and before every restart). ID, DataDir, Transport, Bootstrap,
	// Peers, Clock, Logger, StorageFaults and Disk are set by the Cluster.
	Config func(i int, c *cluster.Config)
	// NoHTTP and NoRESP leave out the HTTP API and the RESP bridge that
	// each node serves by default.
	NoHTTP, NoRESP bool
	// Seed seeds message faults; default 1. The nemesis has its own.
	Seed uint64
	// LogLevel of the nodes' logs (written through t.Log): trace, debug,
	// info, warn, error or off. Default: $LOCKNODE_TEST_LOG, else warn.
	LogLevel string
	// WaitTimeout bounds Leader(), New's wait for the first leader and
	// Restart. Default 20s.
	WaitTimeout time.Duration
	// Network, when set, carries every connection of the cluster (peer
	// links, the HTTP and RESP listeners, the test clients' dials)
	// instead of loopback TCP: package sim's in-memory network, on which
	// a whole cluster runs in virtual time. Default: loopback TCP.
	Network Network
	// SimulatedDisk puts each node's data directory on a simulated disk
	// (internal/simdisk, seeded from Seed and the node): a Crash, the
	// nemesis's among them, loses what the node wrote and had not synced,
	// or tears it. Default: the operating system's disk, on which a
	// crashed node keeps everything it wrote (the page cache is the
	// process's).
	SimulatedDisk bool
}

// Network is what a Cluster listens and dials on (Options.Network).
type Network interface {
	// Listen opens a listener on a fresh address.
	Listen() (net.Listener, error)
	// Dial connects to an address a Listen returned.
	Dial(ctx context.Context, addr string) (net.Conn, error)
}

// tcpNetwork is the default Network: loopback TCP.
type tcpNetwork struct{}

func (tcpNetwork) Listen() (net.Listener, error) { return net.Listen("tcp", "127.0.0.1:0") }

func (tcpNetwork) Dial(ctx context.Context, addr string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, "tcp", addr)
}

// httpClient is an http.Client that dials through the cluster's network
// (nil on loopback TCP: the client package's default).
func (c *Cluster) httpClient() *http.Client {
	if _, tcp := c.opts.Network.(tcpNetwork); tcp {
		return nil
	}
	nw := c.opts.Network
	return &http.Client{Transport: &http.Transport{
		DialContext:         func(ctx context.Context, _, addr string) (net.Conn, error) { return nw.Dial(ctx, addr) },
		MaxIdleConnsPerHost: 8,
	}}
}

// Cluster is an in-process cluster of real nodes (real FSM, raft and
// bolt storage in t.TempDir) wired through a fault-injecting network.
// Node indices run from 0 to N()-1; node i has raft id "n<i>".
// Methods are safe for concurrent use; those that take no context and
// may fail call t.Fatal and so belong to the test's goroutine.
type Cluster struct {
	t    testing.TB
	opts Options
	log  hclog.Logger
	tlog *testLog
	net  *faultNet

	peers  []cluster.Peer
	dirs   []string
	clocks []*skewClock
	raftLn []*stableListener
	httpLn []*stableListener
	respLn []*stableListener

	disks      []*diskState    // each node's disk faults (disk.go)
	simDisks   []*simdisk.Disk // with Options.SimulatedDisk, each node's disk
	diskFaults atomic.Int64    // operations they failed

	mu    sync.Mutex
	nodes []*cluster.Node
	srvs  []*server.Server // each node with its HTTP and RESP servers
	// recorders follow every node's restarts (RecordApplied).
	recorders []*AppliedRecorder
	paused    []bool
	// rates is every SkewClock call in order, for slowestRate.
	rates []rateChange
}

// rateChange is one node's clock set to a new rate.
type rateChange struct {
	at   time.Time
	node int
	rate float64
}

// New starts n nodes bootstrapped as one cluster and waits for a
// leader. Everything is torn down by t.Cleanup.
func New(t testing.TB, n int, opts Options) *Cluster {
	t.Helper()
	if n < 1 || n > 64 {
		t.Fatalf("testcluster: %d nodes; want 1..64", n)
	}
	if opts.WaitTimeout <= 0 {
		opts.WaitTimeout = 20 * time.Second
	}
	if opts.Seed == 0 {
		opts.Seed = 1
	}
	if opts.Network == nil {
		opts.Network = tcpNetwork{}
	}
	c := &Cluster{
		t: t, opts: opts, tlog: &testLog{t: t},
		net:    newFaultNet(n, opts.Seed, opts.Network),
		nodes:  make([]*cluster.Node, n),
		srvs:   make([]*server.Server, n),
		paused: make([]bool, n),
	}
	// Registered first, so it runs last: no t.Log after the nodes are gone.
	t.Cleanup(c.tlog.stop)
	c.log = newTestLogger(c.tlog, logLevel(opts.LogLevel))
	// The data directories before shutdown: cleanups run last-registered
	// first, so the nodes stop before their directories are removed
	// (else a snapshot under way fails, or RemoveAll races a write).
	for range n {
		c.dirs = append(c.dirs, t.TempDir())
	}
	t.Cleanup(c.shutdown)

	for i := range n {
		rl, err := newStableListener(opts.Network, c.net.raftWrap(i))
		if err != nil {
			t.Fatalf("testcluster: listen: %v", err)
		}
		c.raftLn = append(c.raftLn, rl)
		hl, err := newStableListener(opts.Network, nil)
		if err != nil {
			t.Fatalf("testcluster: listen: %v", err)
		}
		c.httpLn = append(c.httpLn, hl)
		sl, err := newStableListener(opts.Network, nil)
		if err != nil {
			t.Fatalf("testcluster: listen: %v", err)
		}
		c.respLn = append(c.respLn, sl)
		c.net.addrs[i] = rl.addr()
		c.peers = append(c.peers, cluster.Peer{ID: nodeID(i), Addr: rl.addr()})
		c.clocks = append(c.clocks, newSkewClock())
		c.disks = append(c.disks, &diskState{faults: &c.diskFaults})
		if opts.SimulatedDisk {
			c.simDisks = append(c.simDisks, simdisk.New(opts.Seed^uint64(i+1)*0x9e3779b97f4a7c15))
		}
	}
	for i := range n {
		if err := c.start(i); err != nil {
			t.Fatalf("testcluster: start %s: %v", nodeID(i), err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), opts.WaitTimeout)
	defer cancel()
	if _, err := c.WaitLeader(ctx); err != nil {
		t.Fatalf("testcluster: no leader: %v", err)
	}
	return c
}

func nodeID(i int) string { return fmt.Sprintf("n%d", i) }

// N is the number of nodes.
func (c *Cluster) N() int { return len(c.peers) }

// Logger is the cluster's logger (through t.Log), for tests' own lines.
func (c *Cluster) Logger() hclog.Logger { return c.log }

func (c *Cluster) start(i int) error {
	tr, err := transport.New(transport.Config{
		Listener:  c.raftLn[i].attach(),
		Advertise: c.peers[i].Addr,
		Dial:      c.net.dialer(i),
		Logger:    c.log.Named("transport").With("node", nodeID(i)),
		// Calls fail fast on a cut link; a short timeout keeps a call on a
		// paused leader from holding a client for long.
		CallTimeout: 5 * time.Second,
	})
	if err != nil {
		return err
	}
	cfg := cluster.DefaultConfig()
	if c.opts.Config != nil {
		c.opts.Config(i, &cfg)
	}
	cfg.ID = nodeID(i)
	cfg.DataDir = c.dirs[i]
	cfg.Transport = tr
	cfg.Bootstrap = true
	cfg.Peers = c.peers
	cfg.Join = nil
	cfg.Clock = c.clocks[i]
	cfg.Logger = c.log
	cfg.StorageFaults = c.disks[i].hook
	if c.simDisks != nil {
		cfg.Disk = c.simDisks[i]
	}
	sc := server.Config{
		Cluster: cfg,
		RESP:    redisbridge.Config{RequestTimeout: 10 * time.Second},
		Logger:  c.log.With("node", nodeID(i)),
		Listen:  c.listen(i),
	}
	if !c.opts.NoHTTP {
		sc.HTTPAddr = c.httpLn[i].addr()
	}
	if !c.opts.NoRESP {
		sc.RESPAddr = c.respLn[i].addr()
	}
	srv, err := server.Start(context.Background(), sc)
	if err != nil {
		tr.Close()
		return err
	}
	c.mu.Lock()
	c.nodes[i], c.srvs[i] = srv.Node(), srv
	for _, r := range c.recorders {
		r.add(i, srv.Node())
	}
	c.mu.Unlock()
	return nil
}

// listen hands node i's servers the stable listener of the address
// they ask for, so a restarted node serves on the same ports.
func (c *Cluster) listen(i int) func(network, addr string) (net.Listener, error) {
	return func(_, addr string) (net.Listener, error) {
		switch addr {
		case c.httpLn[i].addr():
			return c.httpLn[i].attach(), nil
		case c.respLn[i].addr():
			return c.respLn[i].attach(), nil
		}
		return nil, fmt.Errorf("testcluster: node %s has no listener on %s", nodeID(i), addr)
	}
}

// stop takes node i down without a clean shutdown: its links are cut
// first (nothing more leaves it), then servers, raft and storage stop.
func (c *Cluster) stop(i int) {
	c.net.setDown(i, true)
	c.clocks[i].setPaused(false)
	c.net.setPaused(i, false)
	c.mu.Lock()
	srv := c.srvs[i]
	c.nodes[i], c.srvs[i] = nil, nil
	c.paused[i] = false
	c.mu.Unlock()
	if srv != nil {
		if err := srv.Kill(); err != nil {
			c.log.Warn("kill", "node", nodeID(i), "error", err)
		}
	}
}

func (c *Cluster) shutdown() {
	for i := range c.peers {
		c.stop(i)
	}
	c.net.close()
	for i := range c.peers {
		c.raftLn[i].close()
		c.httpLn[i].close()
		c.respLn[i].close()
	}
}

// Node returns node i, or nil while it is crashed.
func (c *Cluster) Node(i int) *cluster.Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nodes[i]
}

// Locker returns node i as an embedded api.Locker, resolved at each call
// so it follows restarts; calls on a crashed node fail with ErrNodeDown.
func (c *Cluster) Locker(i int) api.Locker { return nodeLocker{c: c, i: i} }

// HTTPAddr and RESPAddr are node i's API addresses (stable across
// restarts).
func (c *Cluster) HTTPAddr(i int) string { return c.httpLn[i].addr() }
func (c *Cluster) RESPAddr(i int) string { return c.respLn[i].addr() }

// Endpoints are the HTTP base URLs of every node, for client.Config.
func (c *Cluster) Endpoints() []string {
	var out []string
	for i := range c.peers {
		out = append(out, "http://"+c.HTTPAddr(i))
	}
	return out
}

// Up reports whether node i is running (not crashed).
func (c *Cluster) Up(i int) bool { return c.Node(i) != nil }

// Paused reports whether node i is paused.
func (c *Cluster) Paused(i int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.paused[i]
}

// LeaderIndex returns the index of the node that leads with its term's
// clock set, or -1. It does not wait.
func (c *Cluster) LeaderIndex() int {
	for i := range c.peers {
		if c.Paused(i) {
			continue
		}
		if n := c.Node(i); n != nil && n.IsLeader() {
			return i
		}
	}
	return -1
}

// WaitLeader waits until a running, unpaused node leads, reaches a
// quorum, and every other running, unpaused node that it reaches knows
// it; it returns its index.
func (c *Cluster) WaitLeader(ctx context.Context) (int, error) {
	return waitFor(ctx, 5*time.Millisecond, func() (int, bool) {
		l := c.LeaderIndex()
		if l < 0 {
			return -1, false
		}
		reach := 1 // a leader cut off from a quorum is about to step down
		for i := range c.peers {
			n := c.Node(i)
			if n == nil || i == l || c.Paused(i) || !c.net.linkOK(l, i) || !c.net.linkOK(i, l) {
				continue
			}
			if id, _ := n.Leader(); id != nodeID(l) {
				return -1, false
			}
			reach++
		}
		return l, 2*reach > c.N()
	})
}

// Leader waits (up to Options.WaitTimeout) for a leader and returns it;
// it fails the test if none is elected.
func (c *Cluster) Leader() *cluster.Node {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), c.opts.WaitTimeout)
	defer cancel()
	i, err := c.WaitLeader(ctx)
	if err != nil {
		c.t.Fatalf("testcluster: no leader: %v", err)
	}
	return c.Node(i)
}

// WaitApplied waits until every running, unpaused node has applied at
// least index.
func (c *Cluster) WaitApplied(ctx context.Context, index uint64) error {
	_, err := waitFor(ctx, 2*time.Millisecond, func() (struct{}, bool) {
		for i := range c.peers {
			n := c.Node(i)
			if n == nil || c.Paused(i) {
				continue
			}
			if n.AppliedIndex() < index {
				return struct{}{}, false
			}
		}
		return struct{}{}, true
	})
	return err
}

// Partition splits the cluster: nodes in different groups cannot reach
// each other; nodes named in no group are cut off from everyone.
// Connections across the cut break at once.
func (c *Cluster) Partition(groups ...[]int) {
	n := c.N()
	group := make([]int, n)
	for i := range group {
		group[i] = -1 - i // alone
	}
	for g, members := range groups {
		for _, i := range members {
			if i >= 0 && i < n {
				group[i] = g
			}
		}
	}
	cut := make([][]bool, n)
	for a := range n {
		cut[a] = make([]bool, n)
		for b := range n {
			cut[a][b] = a != b && group[a] != group[b]
		}
	}
	c.log.Info("partition", "groups", fmt.Sprint(groups))
	c.net.setCut(cut)
}

// Isolate cuts node i off from every other node.
func (c *Cluster) Isolate(i int) {
	var rest []int
	for j := range c.N() {
		if j != i {
			rest = append(rest, j)
		}
	}
	c.Partition(rest)
}

// Heal removes every partition.
func (c *Cluster) Heal() {
	n := c.N()
	cut := make([][]bool, n)
	for a := range n {
		cut[a] = make([]bool, n)
	}
	c.log.Info("heal")
	c.net.setCut(cut)
}

// SetFaults sets the message faults of every link (zero Faults: none).
func (c *Cluster) SetFaults(f Faults) {
	c.log.Info("faults", "drop", f.Drop, "delay", f.Delay, "dup", f.Duplicate)
	c.net.setFaults(f)
}

// Crash stops node i as a crash would: its links are cut at once (in
// flight messages are lost), then its servers, raft and storage stop
// without a leadership transfer or leave. Requests in flight on it fail.
// Crashing a crashed node does nothing.
func (c *Cluster) Crash(i int) {
	c.log.Info("crash", "node", nodeID(i))
	c.stop(i)
	if c.simDisks != nil {
		// The node is down: what it had not synced goes, a seeded part of
		// it torn (Options.SimulatedDisk).
		if err := c.simDisks[i].Crash(true); err != nil {
			c.t.Errorf("testcluster: simulated disk crash of %s: %v", nodeID(i), err)
		}
	}
}

// Restart starts crashed node i again from its data directory, on the
// same addresses. It fails the test if the node cannot start.
func (c *Cluster) Restart(i int) {
	c.t.Helper()
	if err := c.RestartErr(i); err != nil {
		c.t.Fatalf("testcluster: restart %s: %v", nodeID(i), err)
	}
}

// RestartErr is Restart returning the error (for goroutines other than
// the test's).
func (c *Cluster) RestartErr(i int) error {
	if c.Up(i) {
		return nil
	}
	c.log.Info("restart", "node", nodeID(i))
	c.net.setDown(i, false)
	return c.start(i)
}

// Pause stops the world on node i: every read and write on its links
// blocks, it dials nothing, and its clock (so its leader clock and
// ticks) stops until Resume. Raft's own timers keep running, which a
// real process stop would freeze too (see ProcCluster for that).
func (c *Cluster) Pause(i int) {
	c.log.Info("pause", "node", nodeID(i))
	c.mu.Lock()
	if c.nodes[i] == nil {
		c.mu.Unlock()
		return
	}
	c.paused[i] = true
	c.mu.Unlock()
	c.net.setPaused(i, true)
	c.clocks[i].setPaused(true)
}

// Resume undoes Pause. Node i's clock continues from real time, as a
// process's monotonic clock does after SIGCONT.
func (c *Cluster) Resume(i int) {
	c.log.Info("resume", "node", nodeID(i))
	c.clocks[i].setPaused(false)
	c.net.setPaused(i, false)
	c.mu.Lock()
	c.paused[i] = false
	c.mu.Unlock()
}

// SkewClock sets node i's wall clock to offset from real time and its
// clock to run at rate times real speed from now on (rate 1: no drift).
// It persists across restarts. See skewClock for why an offset moves
// only the wall part of the node's readings.
func (c *Cluster) SkewClock(i int, offset time.Duration, rate float64) {
	if rate <= 0 {
		rate = 1
	}
	c.log.Info("skew", "node", nodeID(i), "offset", offset, "rate", rate)
	c.mu.Lock()
	c.rates = append(c.rates, rateChange{at: time.Now(), node: i, rate: rate})
	c.mu.Unlock()
	c.clocks[i].skew(offset, rate)
}

// slowestRate is the slowest rate (SkewClock) any node's clock ran at
// some moment between from and to, 1 if none ran slow. A leader whose
// clock runs at rate r makes the cluster clock, and so every lease it
// times, run at r: a TTL lasts TTL/r of real time (late, which is safe),
// so a checker of how late holds end scales its bound by 1/r.
func slowestRate(c *Cluster, from, to time.Time) float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	cur := make([]float64, len(c.clocks))
	for i := range cur {
		cur[i] = 1
	}
	slowest := 1.0
	for _, r := range c.rates {
		switch {
		case !r.at.After(from):
			cur[r.node] = r.rate
		case !r.at.After(to):
			slowest = min(slowest, r.rate)
		}
	}
	for _, r := range cur {
		slowest = min(slowest, r)
	}
	return slowest
}

// JumpClock moves node i's monotonic reading by d at once: a broken
// clock, for checking that the checkers catch what it does to leases.
func (c *Cluster) JumpClock(i int, d time.Duration) {
	c.log.Info("clock jump", "node", nodeID(i), "by", d)
	c.clocks[i].jump(d)
}

// Snapshot returns node i's FSM snapshot bytes and the index they are at
// (a local read; nil if the node is down).
func (c *Cluster) Snapshot(i int) ([]byte, uint64, error) {
	n := c.Node(i)
	if n == nil {
		return nil, 0, errNodeDown
	}
	var buf bytes.Buffer
	var idx uint64
	var serr error
	err := n.Read(context.Background(), true, func(t *fsm.Table, _ int64) {
		idx = t.AppliedIndex()
		serr = t.Snapshot(&buf)
	})
	if err == nil {
		err = serr
	}
	return buf.Bytes(), idx, err
}

// waitFor polls cond every step until it holds or ctx ends.
func waitFor[T any](ctx context.Context, step time.Duration, cond func() (T, bool)) (T, error) {
	t := time.NewTicker(step)
	defer t.Stop()
	for {
		if v, ok := cond(); ok {
			return v, nil
		}
		select {
		case <-ctx.Done():
			var zero T
			return zero, fmt.Errorf("testcluster: condition not met: %w", ctx.Err())
		case <-t.C:
		}
	}
}

// ErrNodeDown is returned by Locker(i) calls while node i is crashed.
var ErrNodeDown = errNodeDown

// nodeLocker resolves node i at each call.
type nodeLocker struct {
	c *Cluster
	i int
}

func (l nodeLocker) node() (*cluster.Node, error) {
	if n := l.c.Node(l.i); n != nil {
		return n, nil
	}
	return nil, errNodeDown
}

func (l nodeLocker) Acquire(ctx context.Context, r api.AcquireRequest) (api.Lease, error) {
	n, err := l.node()
	if err != nil {
		return api.Lease{}, err
	}
	return n.Acquire(ctx, r)
}

func (l nodeLocker) TryAcquire(ctx context.Context, r api.AcquireRequest) (api.Lease, error) {
	n, err := l.node()
	if err != nil {
		return api.Lease{}, err
	}
	return n.TryAcquire(ctx, r)
}

func (l nodeLocker) Release(ctx context.Context, r api.ReleaseRequest) (api.ReleaseResult, error) {
	n, err := l.node()
	if err != nil {
		return api.ReleaseResult{}, err
	}
	return n.Release(ctx, r)
}

func (l nodeLocker) Extend(ctx context.Context, r api.ExtendRequest) (api.Lease, error) {
	n, err := l.node()
	if err != nil {
		return api.Lease{}, err
	}
	return n.Extend(ctx, r)
}

func (l nodeLocker) Inspect(ctx context.Context, key string, o api.ReadOptions) (api.LockInfo, error) {
	n, err := l.node()
	if err != nil {
		return api.LockInfo{}, err
	}
	return n.Inspect(ctx, key, o)
}

func (l nodeLocker) List(ctx context.Context, r api.ListRequest) (api.ListResult, error) {
	n, err := l.node()
	if err != nil {
		return api.ListResult{}, err
	}
	return n.List(ctx, r)
}

func (l nodeLocker) OpenSession(ctx context.Context, ttl time.Duration) (api.SessionInfo, error) {
	n, err := l.node()
	if err != nil {
		return api.SessionInfo{}, err
	}
	return n.OpenSession(ctx, ttl)
}

func (l nodeLocker) KeepAlive(ctx context.Context, id string) (api.SessionInfo, error) {
	n, err := l.node()
	if err != nil {
		return api.SessionInfo{}, err
	}
	return n.KeepAlive(ctx, id)
}

func (l nodeLocker) CloseSession(ctx context.Context, id string) error {
	n, err := l.node()
	if err != nil {
		return err
	}
	return n.CloseSession(ctx, id)
}

func (l nodeLocker) FenceCheck(ctx context.Context, res string, tok uint64) (api.FenceResult, error) {
	n, err := l.node()
	if err != nil {
		return api.FenceResult{}, err
	}
	return n.FenceCheck(ctx, res, tok)
}

func (l nodeLocker) Campaign(ctx context.Context, req api.CampaignRequest) (api.Leader, error) {
	n, err := l.node()
	if err != nil {
		return api.Leader{}, err
	}
	return n.Campaign(ctx, req)
}

func (l nodeLocker) Resign(ctx context.Context, ld api.Leader) error {
	n, err := l.node()
	if err != nil {
		return err
	}
	return n.Resign(ctx, ld)
}

func (l nodeLocker) Proclaim(ctx context.Context, ld api.Leader, value string) (api.Leader, error) {
	n, err := l.node()
	if err != nil {
		return api.Leader{}, err
	}
	return n.Proclaim(ctx, ld, value)
}

func (l nodeLocker) Observe(ctx context.Context, e string) (<-chan api.Leader, error) {
	n, err := l.node()
	if err != nil {
		return nil, err
	}
	return n.Observe(ctx, e)
}

func (l nodeLocker) Status(ctx context.Context) (api.Status, error) {
	n, err := l.node()
	if err != nil {
		return api.Status{}, err
	}
	return n.Status(ctx)
}

var _ api.Locker = nodeLocker{}

// isDown reports whether err means the node was down before the call.
func isDown(err error) bool { return errors.Is(err, errNodeDown) }
