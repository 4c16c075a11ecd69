package testcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/client"
	"github.com/locknode/locknode/fsm"
	"github.com/locknode/locknode/wire"
)

// curVersion is the current code's highest cluster version, which a
// cluster of it activates by itself; nextVersion is the synthetic next
// release's (fsm/version_next.go).
const (
	curVersion  = fsm.MaxClusterVersion
	nextVersion = curVersion + 1
)

// Rolling upgrades between two real binaries (docs/UPGRADING.md): the
// current code, and the synthetic next release built with -tags
// locknode_next, which runs one cluster version more than the current
// code (nextVersion) and brings, gated on it, a new op (NEXT.NOTE), a new
// snapshot format (6) and a changed decision. `make upgrade-test` runs
// them (LOCKNODE_UPGRADE_TEST=1); they build two binaries and run
// `locknode serve` processes for a few minutes, so `make test` leaves
// them out.
func TestUpgrade(t *testing.T) {
	if os.Getenv("LOCKNODE_UPGRADE_TEST") != "1" {
		t.Skip("builds two locknode binaries and runs mixed-version clusters: make upgrade-test (LOCKNODE_UPGRADE_TEST=1)")
	}
	cur := BuildLocknode(t)
	next := BuildLocknodeTags(t, "locknode_next")
	t.Run("rolling", func(t *testing.T) { testRollingUpgrade(t, cur, next) })
	t.Run("rollback", func(t *testing.T) { testUpgradeRollback(t, cur, next) })
}

// testRollingUpgrade: three nodes of the current release under load
// (locks with renewals and waits over HTTP and RESP on every node, Lua
// scripts, elections, held locks that must survive) are replaced one at
// a time by the next release. Until the third is, the cluster stays at
// curVersion: the new op is refused and every node writes the same
// format-5 snapshot. Then nextVersion is activated by itself, the new op
// works, snapshots are format 6 on every node, a node of the current
// release may no longer join, and a format-6 snapshot does not restore
// with the current binary. The checkers judge the whole history.
func testRollingUpgrade(t *testing.T, cur, next string) {
	p := NewProcCluster(t, cur, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if _, err := p.WaitLeader(ctx); err != nil {
		t.Fatal(err)
	}
	// The current release activates its own highest version first.
	waitVersion(ctx, t, p, curVersion)
	load := newUpgradeLoad(t, p)
	load.run(ctx, func() { load.waitOps(ctx, 30) })
	// A snapshot of the current release restores with the next one.
	snap5 := saveSnapshot(ctx, t, p, 0)
	if b, err := os.ReadFile(snap5); err != nil || len(b) == 0 || b[0] != 5 {
		t.Fatalf("snapshot of the current release: %v, format %v", err, b[:min(len(b), 1)])
	}
	if out, err := exec.Command(next, "snapshot", "restore", snap5, "--data", t.TempDir()+"/d", "--id", "z", "--peers", "z=127.0.0.1:1").CombinedOutput(); err != nil {
		t.Fatalf("next release restoring a snapshot of the current one: %v\n%s", err, out)
	}
	for i := range 3 {
		load.run(ctx, func() {
			load.waitOps(ctx, 30)
			t.Logf("replace %s by the next release", nodeID(i))
			p.Kill(i)
			load.waitOps(ctx, 20)
			p.SetBinary(i, next)
			p.Restart(i)
			waitReady(ctx, t, p, i)
			load.waitOps(ctx, 20)
		})
		if i < 2 {
			checkVersions(ctx, t, p, curVersion)
			if _, err := noteAt(ctx, p, i, "a", "x"); err == nil || !strings.Contains(err.Error(), fmt.Sprint("needs cluster version ", nextVersion)) {
				t.Fatalf("NEXT.NOTE before every node runs the next release: %v", err)
			}
			if f := converge(ctx, t, p); f != 5 {
				t.Fatalf("mixed cluster writes snapshot format %d, want 5", f)
			}
			// The next release's changed decision is not in force yet.
			if _, err := httpAt(p, i).OpenSession(ctx, 500*time.Millisecond); err != nil {
				t.Fatalf("short session before activation: %v", err)
			}
		}
	}
	waitVersion(ctx, t, p, nextVersion)
	load.run(ctx, func() { load.waitOps(ctx, 40) })
	if prev, err := noteAt(ctx, p, 0, "a", "x"); err != nil || prev != nil {
		t.Fatalf("first note: %v %v", prev, err)
	}
	if prev, err := noteAt(ctx, p, 2, "a", "y"); err != nil || prev != "x" {
		t.Fatalf("second note, on another node: %v %v", prev, err)
	}
	if f := converge(ctx, t, p); f != 6 {
		t.Fatalf("after activation: snapshot format %d, want 6", f)
	}
	if _, err := httpAt(p, 1).OpenSession(ctx, 500*time.Millisecond); !errors.Is(err, api.ErrBadRequest) {
		t.Fatalf("short session after activation (the changed decision): %v", err)
	}

	// A node of the current release may not join the activated cluster.
	if i, err := p.AddNode(cur); err == nil {
		t.Fatalf("a node of the current release joined a version %d cluster as %s", nextVersion, nodeID(i))
	}
	if st := status(ctx, t, p, 0); len(st.Members) != 3 {
		t.Fatalf("members after a refused join: %+v", st.Members)
	}

	// A format-6 snapshot: the current release refuses it, naming the
	// version; the next release restores it.
	snap := saveSnapshot(ctx, t, p, 0)
	out, err := exec.Command(cur, "snapshot", "restore", snap, "--data", t.TempDir()+"/d", "--id", "z", "--peers", "z=127.0.0.1:1").CombinedOutput()
	if err == nil || !strings.Contains(string(out), fmt.Sprint("needs cluster version ", nextVersion)) {
		t.Fatalf("current release restoring a format-6 snapshot: %v\n%s", err, out)
	}
	if out, err := exec.Command(next, "snapshot", "restore", snap, "--data", t.TempDir()+"/d", "--id", "z", "--peers", "z=127.0.0.1:1").CombinedOutput(); err != nil {
		t.Fatalf("next release restoring its snapshot: %v\n%s", err, out)
	}
	load.check(ctx, t)
}

// testUpgradeRollback, with manual activation (serve --cluster-upgrade
// manual): a node of the next release joins a cluster of the current one
// and leaves; a node rolled forward is rolled back while version 1 is
// active, under load, and the cluster stays converged; with every node on
// the next release nothing is activated until `locknode cluster
// upgrade`, which runs while the leader is killed; after it, a node
// rolled back to the current release cannot apply the log and says so,
// and rolled forward again it catches up.
func testUpgradeRollback(t *testing.T, cur, next string) {
	// Manual from the start: the current release would activate its own
	// highest version by itself.
	p := NewProcCluster(t, cur, 3, "--cluster-upgrade", "manual")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if _, err := p.WaitLeader(ctx); err != nil {
		t.Fatal(err)
	}

	// A node of the next release joins the version 1 cluster, and leaves.
	j, err := p.AddNode(next)
	if err != nil {
		t.Fatalf("next release joining a version 1 cluster: %v", err)
	}
	waitReady(ctx, t, p, j)
	checkVersions(ctx, t, p, 1)
	if err := httpAt(p, 0).RemoveServer(ctx, nodeID(j)); err != nil {
		t.Fatal(err)
	}
	p.Kill(j)

	load := newUpgradeLoad(t, p)
	replace := func(i int, bin, what string) {
		load.run(ctx, func() {
			load.waitOps(ctx, 20)
			t.Logf("%s %s", what, nodeID(i))
			p.Kill(i)
			p.SetBinary(i, bin)
			p.Restart(i)
			waitReady(ctx, t, p, i)
			load.waitOps(ctx, 20)
		})
		checkVersions(ctx, t, p, 1)
		if f := converge(ctx, t, p); f != 5 {
			t.Fatalf("after %s %s: snapshot format %d, want 5", what, nodeID(i), f)
		}
	}
	replace(0, next, "roll forward")
	replace(1, next, "roll forward")
	replace(1, cur, "roll back")
	replace(1, next, "roll forward")
	replace(2, next, "roll forward")
	// Every node runs 1..nextVersion, activation is manual: still version 1.
	if _, err := noteAt(ctx, p, 0, "a", "x"); err == nil {
		t.Fatal("NEXT.NOTE before activation")
	}
	replace(2, cur, "roll back")
	replace(2, next, "roll forward")

	// `locknode cluster upgrade` while the leader is killed: it either
	// activated or not; asked again until it has.
	l, err := p.WaitLeader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ep := p.Endpoints()[(l+1)%3]
	done := make(chan struct{})
	go func() { // ends when the command exits
		defer close(done)
		out, err := exec.Command(next, "cluster", "upgrade", "--endpoints", ep, "--timeout", "10s").CombinedOutput()
		t.Logf("cluster upgrade during the leader's kill: %v %s", err, out)
	}()
	p.Kill(l)
	<-done
	p.Restart(l)
	waitReady(ctx, t, p, l)
	out, err := exec.Command(next, "cluster", "upgrade", "--json", "--endpoints", ep).CombinedOutput()
	if err != nil || !strings.Contains(string(out), fmt.Sprintf(`"cluster_version": %d`, nextVersion)) {
		t.Fatalf("cluster upgrade: %v\n%s", err, out)
	}
	waitVersion(ctx, t, p, nextVersion)
	if prev, err := noteAt(ctx, p, 1, "a", "x"); err != nil || prev != nil {
		t.Fatalf("note after activation: %v %v", prev, err)
	}

	// Rolled back after activation, a node cannot apply the log: it
	// stops with an error naming the version (at its start, restoring a
	// snapshot of nextVersion, or once it meets the activation entry).
	p.Kill(0)
	p.SetBinary(0, cur)
	if err := p.start(0, p.peers()); err == nil {
		if _, err := waitFor(ctx, 50*time.Millisecond, func() (string, bool) {
			st, err := p.Locker(0).Status(ctx)
			return st.Halted, err == nil && strings.Contains(st.Halted, fmt.Sprint("cluster version ", nextVersion))
		}); err != nil {
			t.Fatalf("a node rolled back after activation did not halt: %v", err)
		}
		if readyz(ctx, p, 0) {
			t.Fatal("a halted node says it is ready")
		}
	}
	p.Kill(0)
	p.SetBinary(0, next)
	p.Restart(0)
	waitReady(ctx, t, p, 0)
	if f := converge(ctx, t, p); f != 6 {
		t.Fatalf("after activation: snapshot format %d, want 6", f)
	}
	load.check(ctx, t)
}

// upgradeLoad is the clients of an upgrade test, run in phases (run): on
// every node an HTTP and a RESP lock client (Workload: acquires that
// wait, extends, releases), a Lua script client and an election
// campaigner; and a client taking long holds that must survive
// (CheckDurable).
type upgradeLoad struct {
	t  *testing.T
	p  *ProcCluster
	h  *History
	w  *Workload
	rc []*redis.Client
	el []*client.Client
	du *Client

	mu     sync.Mutex
	incrs  []int64 // values acknowledged INCRs returned
	wins   []win
	durSeq int
}

// win is one election won: when the campaign was sent and answered.
type win struct {
	fence      uint64
	sent, done time.Time
}

func newUpgradeLoad(t *testing.T, p *ProcCluster) *upgradeLoad {
	l := &upgradeLoad{t: t, p: p, h: NewHistory()}
	l.w = &Workload{Keys: Keys("k", 3), Seed: 28}
	for i := range p.N() {
		if !p.Running(i) {
			continue
		}
		l.w.Clients = append(l.w.Clients, NewClient(l.h, 2*i, "http", httpAt(p, i)), NewRESPClient(l.h, 2*i+1, p.RESPAddr(i), false))
		l.rc = append(l.rc, redis.NewClient(&redis.Options{Addr: p.RESPAddr(i), Protocol: 2, MaxRetries: -1,
			DialTimeout: time.Second, ReadTimeout: 3 * time.Second}))
		l.el = append(l.el, httpAt(p, i))
	}
	l.du = NewClient(l.h, 100, "http", httpAt(p, 0))
	t.Cleanup(func() {
		for _, c := range l.w.Clients {
			c.Close()
		}
		for _, c := range l.rc {
			c.Close()
		}
	})
	return l
}

// run runs every client while action does, then stops them.
func (l *upgradeLoad) run(ctx context.Context, action func()) {
	wctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // ends when stop is called
		defer wg.Done()
		l.w.Run(wctx)
	}()
	for i := range l.rc {
		wg.Add(2)
		go func() { // ends when stop is called
			defer wg.Done()
			l.scripts(wctx, l.rc[i])
		}()
		go func() { // ends when stop is called
			defer wg.Done()
			l.campaign(wctx, l.el[i], fmt.Sprint("c", i))
		}()
	}
	wg.Add(1)
	go func() { // ends when stop is called
		defer wg.Done()
		l.durable(wctx)
	}()
	action()
	stop()
	wg.Wait()
}

// waitOps waits for more operations in the history.
func (l *upgradeLoad) waitOps(ctx context.Context, more int) {
	l.t.Helper()
	n := len(l.h.Ops()) + more
	if _, err := waitFor(ctx, 10*time.Millisecond, func() (int, bool) { return 0, len(l.h.Ops()) >= n }); err != nil {
		l.t.Fatalf("waiting for %d more operations: %v", more, err)
	}
}

func (l *upgradeLoad) scripts(ctx context.Context, rc *redis.Client) {
	for ctx.Err() == nil {
		c, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Second)
		v, err := rc.Eval(c, "return redis.call('INCR', KEYS[1])", []string{"ctr"}).Int64()
		cancel()
		if err != nil {
			pause(ctx, 100*time.Millisecond)
			continue
		}
		l.mu.Lock()
		l.incrs = append(l.incrs, v)
		l.mu.Unlock()
	}
}

func (l *upgradeLoad) campaign(ctx context.Context, c *client.Client, value string) {
	for ctx.Err() == nil {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Second)
		s, err := c.OpenSession(cctx, 10*time.Second)
		if err != nil {
			cancel()
			pause(ctx, 100*time.Millisecond)
			continue
		}
		sent := time.Now()
		ld, err := c.Campaign(cctx, api.CampaignRequest{Election: "upgrade", Value: value, Session: s.ID})
		if err == nil {
			l.mu.Lock()
			l.wins = append(l.wins, win{ld.Fence, sent, time.Now()})
			l.mu.Unlock()
			pause(ctx, 20*time.Millisecond)
			_ = c.Resign(cctx, ld)
		}
		_ = c.CloseSession(cctx, s.ID)
		cancel()
	}
}

// durable takes holds of ten minutes that no one releases: each
// acknowledged one must still be there at the end (CheckDurable).
func (l *upgradeLoad) durable(ctx context.Context) {
	for ctx.Err() == nil {
		l.mu.Lock()
		l.durSeq++
		key := fmt.Sprintf("dur-%d", l.durSeq)
		l.mu.Unlock()
		c, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Second)
		_, err := l.du.TryAcquire(c, key, NewOwner(), 10*time.Minute)
		cancel()
		if err != nil {
			pause(ctx, 100*time.Millisecond)
		} else {
			pause(ctx, 20*time.Millisecond)
		}
	}
}

// check runs the checkers over everything the clients saw.
func (l *upgradeLoad) check(ctx context.Context, t *testing.T) {
	ops := l.h.Ops()
	t.Logf("history: %d ops: %s; %d script increments, %d election wins", len(ops), l.h.Summary(), len(l.incrs), len(l.wins))
	if err := CheckLinearizable(ops, time.Minute); err != nil {
		t.Errorf("linearizability: %v", err)
	}
	if err := CheckFences(ops); err != nil {
		t.Errorf("fences: %v", err)
	}
	nl, err := l.p.WaitLeader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	read, err := ListReader(ctx, l.p.Locker(nl), "dur-")
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckDurable(ctx, ops, "dur-", read); err != nil {
		t.Errorf("durability: %v", err)
	}
	// Every acknowledged INCR returned a value of its own, and none is
	// lost: the counter is at least the highest and at least their number.
	final, err := l.rc[nl].Get(ctx, "ctr").Int64()
	if err != nil {
		t.Fatal(err)
	}
	incrs := slices.Clone(l.incrs)
	slices.Sort(incrs)
	if len(incrs) == 0 || len(slices.Compact(slices.Clone(incrs))) != len(incrs) || final < incrs[len(incrs)-1] || final < int64(len(incrs)) {
		t.Errorf("script counter %d after %d acknowledged increments (highest %v)", final, len(incrs), incrs[max(len(incrs)-1, 0):])
	}
	// Election fences are unique, and a win answered before another was
	// asked for has the lower fence.
	seen := map[uint64]bool{}
	for _, a := range l.wins {
		if seen[a.fence] {
			t.Errorf("election fence %d won twice", a.fence)
		}
		seen[a.fence] = true
		for _, b := range l.wins {
			if a.done.Before(b.sent) && a.fence >= b.fence {
				t.Errorf("election won with fence %d after a win with fence %d", b.fence, a.fence)
			}
		}
	}
	if len(l.wins) == 0 {
		t.Error("no election was won")
	}
}

// httpAt is a fail-over HTTP client that starts with node i.
func httpAt(p *ProcCluster, i int) *client.Client {
	eps := p.Endpoints()
	eps = append(eps[i:], eps[:i]...)
	cl, err := client.New(client.Config{Endpoints: eps, RequestTimeout: 3 * time.Second,
		Retry: client.RetryPolicy{MaxAttempts: 6, BaseDelay: 20 * time.Millisecond, MaxDelay: 200 * time.Millisecond}})
	if err != nil {
		panic(err)
	}
	return cl
}

// noteAt runs NEXT.NOTE key value on node i.
func noteAt(ctx context.Context, p *ProcCluster, i int, key, value string) (any, error) {
	rc := redis.NewClient(&redis.Options{Addr: p.RESPAddr(i), Protocol: 2})
	defer rc.Close()
	v, err := rc.Do(ctx, "NEXT.NOTE", key, value).Result()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	return v, err
}

func status(ctx context.Context, t *testing.T, p *ProcCluster, i int) api.Status {
	t.Helper()
	st, err := p.Locker(i).Status(ctx)
	if err != nil {
		t.Fatalf("status of %s: %v", nodeID(i), err)
	}
	return st
}

// waitReady waits until node i is ready (GET /readyz).
func waitReady(ctx context.Context, t *testing.T, p *ProcCluster, i int) {
	t.Helper()
	if _, err := waitFor(ctx, 20*time.Millisecond, func() (int, bool) {
		return 0, readyz(ctx, p, i)
	}); err != nil {
		t.Fatalf("%s not ready: %v", nodeID(i), err)
	}
}

// checkVersions checks that every running node reports cluster version v
// now, and keeps doing so for one automatic upgrade check (5 s).
func checkVersions(ctx context.Context, t *testing.T, p *ProcCluster, v uint32) {
	t.Helper()
	until := time.Now().Add(6 * time.Second)
	for time.Now().Before(until) {
		for i := range p.N() {
			if !p.Running(i) {
				continue
			}
			if st := status(ctx, t, p, i); st.ClusterVersion != v {
				t.Fatalf("%s at cluster version %d, want %d", nodeID(i), st.ClusterVersion, v)
			}
		}
		pause(ctx, 500*time.Millisecond)
	}
}

// waitVersion waits until every running node reports cluster version v.
func waitVersion(ctx context.Context, t *testing.T, p *ProcCluster, v uint32) {
	t.Helper()
	if _, err := waitFor(ctx, 50*time.Millisecond, func() (int, bool) {
		for i := range p.N() {
			if !p.Running(i) {
				continue
			}
			if st, err := p.Locker(i).Status(ctx); err != nil || st.ClusterVersion != v {
				return 0, false
			}
		}
		return 0, true
	}); err != nil {
		t.Fatalf("cluster version %d not reached: %v", v, err)
	}
}

// converge fetches every running node's snapshot until all are at one
// applied index, checks they are byte-identical (CompareSnapshots) and
// returns their format.
func converge(ctx context.Context, t *testing.T, p *ProcCluster) byte {
	t.Helper()
	var last error
	for try := 0; try < 200 && ctx.Err() == nil; try++ {
		snaps := map[string][]byte{}
		idx := map[uint64]bool{}
		for i := range p.N() {
			if !p.Running(i) {
				continue
			}
			b, at, err := fetchSnapshot(ctx, p, i)
			if err != nil {
				last = err
				break
			}
			snaps[nodeID(i)], idx[at] = b, true
		}
		if len(idx) != 1 || len(snaps) < 2 {
			continue
		}
		if err := CompareSnapshots(snaps); err != nil {
			t.Fatal(err)
		}
		for _, b := range snaps {
			return b[0]
		}
	}
	t.Fatalf("no snapshots of every node at one index: %v", last)
	return 0
}

func fetchSnapshot(ctx context.Context, p *ProcCluster, i int) ([]byte, uint64, error) {
	c := p.Locker(i).(*client.Client)
	body, at, err := c.Snapshot(ctx)
	if err != nil {
		return nil, 0, err
	}
	defer body.Close()
	b, err := io.ReadAll(body)
	return b, at, err
}

// readyz reports whether node i answers GET /readyz with 200.
func readyz(ctx context.Context, p *ProcCluster, i int) bool {
	rctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, p.Endpoints()[i]+wire.PathReadyz, nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// saveSnapshot writes node i's snapshot to a file and returns its path.
func saveSnapshot(ctx context.Context, t *testing.T, p *ProcCluster, i int) string {
	t.Helper()
	b, _, err := fetchSnapshot(ctx, p, i)
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), "snap")
	if err := os.WriteFile(f, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}
