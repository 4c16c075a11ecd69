package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/fsm"
	"github.com/locknode/locknode/httpapi"
	"github.com/locknode/locknode/wire"
)

// faultyLogStore fails every append while fail is set, before the store
// beneath sees it (the store stays intact, as after a write refused with
// ENOSPC).
type faultyLogStore struct {
	raft.LogStore
	fail atomic.Bool
}

var errInjectedNoSpace = fmt.Errorf("injected: %w", syscall.ENOSPC)

func (f *faultyLogStore) StoreLog(l *raft.Log) error {
	return f.StoreLogs([]*raft.Log{l})
}

func (f *faultyLogStore) StoreLogs(logs []*raft.Log) error {
	if f.fail.Load() {
		return errInjectedNoSpace
	}
	return f.LogStore.StoreLogs(logs)
}

// readyCluster is a 3-node cluster whose log stores fail on demand
// (stores[id]).
func readyCluster(t *testing.T, tweak func(*Config)) (*testCluster, map[string]*faultyLogStore) {
	var mu sync.Mutex
	stores := map[string]*faultyLogStore{}
	tc := newTestCluster(t, 3, func(c *Config) {
		id := c.ID
		c.wrapLogStore = func(s raft.LogStore) raft.LogStore {
			f := &faultyLogStore{LogStore: s}
			mu.Lock()
			stores[id] = f
			mu.Unlock()
			return f
		}
		if tweak != nil {
			tweak(c)
		}
	})
	for _, n := range tc.nodes {
		tc.eventually(20*time.Second, n.id+" ready", func() bool { return n.Ready(context.Background()) == nil })
	}
	mu.Lock()
	defer mu.Unlock()
	return tc, stores
}

// waitNotReady waits until n.Ready fails with an error that matches,
// and returns it.
func waitNotReady(tc *testCluster, n *Node, what string, match func(error) bool) error {
	tc.t.Helper()
	var last error
	tc.eventually(20*time.Second, n.id+" not ready: "+what, func() bool {
		last = n.Ready(context.Background())
		return last != nil && match(last)
	})
	if !errors.Is(last, ErrNotReady) {
		tc.t.Fatalf("Ready error %v does not wrap ErrNotReady", last)
	}
	tc.t.Logf("%s: %v", n.id, last)
	return last
}

// readyz serves GET /readyz of n as a node process does (httpapi on
// Node.Ready) and returns its URL.
func readyz(t *testing.T, n *Node) string {
	srv := httptest.NewServer(httpapi.New(n, httpapi.Config{Ready: n.Ready}))
	t.Cleanup(srv.Close)
	return srv.URL + wire.PathReadyz
}

func getReadyz(t *testing.T, url string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// wantReadyz503 checks that GET /readyz answers 503 with a body that
// says why (the condition must hold while it is called).
func wantReadyz503(t *testing.T, url, why string) {
	t.Helper()
	code, body := getReadyz(t, url)
	if code != http.StatusServiceUnavailable || !strings.Contains(body, why) {
		t.Fatalf("GET /readyz: %d %q, want 503 saying %q", code, body, why)
	}
}

// waitReady waits until n's GET /readyz (url) answers 200.
func waitReady(tc *testCluster, n *Node, url string) {
	tc.t.Helper()
	logged := false
	tc.eventually(30*time.Second, n.id+" ready again", func() bool {
		code, body := getReadyz(tc.t, url)
		if code != http.StatusOK && !logged {
			logged = true
			tc.t.Logf("%s while healing: %d %s", n.id, code, strings.TrimSpace(body))
		}
		return code == http.StatusOK
	})
	if err := n.Ready(context.Background()); err != nil {
		tc.t.Logf("%s: ready over HTTP, then: %v", n.id, err)
	}
}

// A follower whose log appends fail is not ready, with the store's
// error; once appends succeed again (the leader keeps sending the
// entries it refused) it is ready with no operator action.
func TestReadyLogStoreFails(t *testing.T) {
	tc, stores := readyCluster(t, func(c *Config) { c.ReadyMaxLag = 300 * time.Millisecond })
	l := tc.leader(10 * time.Second)
	f := tc.follower()
	url := readyz(t, f)
	ctx := ctxT(t, 30*time.Second)

	stores[f.id].fail.Store(true)
	if _, err := l.TryAcquire(ctx, api.AcquireRequest{Key: "k", Owner: "a", TTLMs: 60000}); err != nil {
		t.Fatal(err)
	}
	err := waitNotReady(tc, f, "log store", func(err error) bool { return errors.Is(err, errInjectedNoSpace) })
	if !strings.Contains(err.Error(), "log store: write failed") || !strings.Contains(err.Error(), "no space left on device") {
		t.Fatalf("reason %q does not name the failed write", err)
	}
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("reason %v does not wrap ENOSPC", err)
	}
	wantReadyz503(t, url, "log store: write failed")
	// The other nodes serve on.
	if err := l.Ready(ctx); err != nil {
		t.Fatalf("leader: %v", err)
	}

	stores[f.id].fail.Store(false)
	waitReady(tc, f, url)
	if err := f.Read(ctx, false, func(*fsm.Table, int64) {}); err != nil {
		t.Fatalf("linearizable read on the healed follower: %v", err)
	}
}

// A follower more than ReadyMaxLagEntries behind the leader's commit
// index is not ready (its own commit index may be far lower: it has not
// stored the entries), and ready again once it caught up.
func TestReadyLagEntries(t *testing.T) {
	tc, _ := readyCluster(t, func(c *Config) { c.ReadyMaxLagEntries = 5 })
	l := tc.leader(10 * time.Second)
	f := tc.follower()
	url := readyz(t, f)
	ctx := ctxT(t, 30*time.Second)

	release := pauseApply(f)
	defer release()
	for i := range 10 {
		if _, err := l.TryAcquire(ctx, api.AcquireRequest{Key: fmt.Sprint("k", i), Owner: "a", TTLMs: 60000}); err != nil {
			t.Fatal(err)
		}
	}
	waitNotReady(tc, f, "entries behind", func(err error) bool {
		return strings.Contains(err.Error(), "entries behind the leader's commit index")
	})
	wantReadyz503(t, url, "entries behind the leader's commit index")
	release()
	waitReady(tc, f, url)
}

// A follower that does not apply the leader's commit index within
// ReadyMaxLag is not ready even when few entries behind; a linearizable
// read on it fails within RetryTimeout with an error to retry elsewhere
// instead of waiting for as long as the client does.
func TestReadyLagTimeAndBoundedRead(t *testing.T) {
	tc, _ := readyCluster(t, func(c *Config) {
		c.ReadyMaxLag = 300 * time.Millisecond
		c.RetryTimeout = 500 * time.Millisecond
	})
	l := tc.leader(10 * time.Second)
	f := tc.follower()
	url := readyz(t, f)
	ctx := ctxT(t, 30*time.Second)

	release := pauseApply(f)
	defer release()
	if _, err := l.TryAcquire(ctx, api.AcquireRequest{Key: "k", Owner: "a", TTLMs: 60000}); err != nil {
		t.Fatal(err)
	}
	waitNotReady(tc, f, "apply", func(err error) bool { return strings.Contains(err.Error(), "not all within 300ms") })
	wantReadyz503(t, url, "not all within 300ms")

	// No deadline: only the node's own bound ends the read.
	done := make(chan error, 1)
	// Ends when Inspect returns: within RetryTimeout, or when the
	// release below lets the node apply.
	go func() {
		_, err := f.Inspect(context.Background(), "k", api.ReadOptions{})
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, api.ErrNoLeader) || !errors.Is(err, ErrNotReady) {
			t.Fatalf("read on a stuck follower: %v, want ErrNoLeader and ErrNotReady", err)
		}
		t.Logf("read: %v", err)
	case <-ctx.Done():
		t.Fatal("a linearizable read on a follower that cannot apply did not end")
	}

	// A blocking acquire (forwarded alone, not batched) is granted at
	// the leader: its answer comes within RetryTimeout, not when the
	// node catches up.
	// Ends when Acquire returns.
	go func() {
		_, err := f.Acquire(context.Background(), api.AcquireRequest{Key: "w", Owner: "b", TTLMs: 60000, WaitMs: 60000})
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("blocking acquire of a free key on a stuck follower: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("a blocking acquire on a follower that cannot apply did not end")
	}

	release()
	waitReady(tc, f, url)
	info, err := f.Inspect(ctx, "k", api.ReadOptions{})
	if err != nil || len(info.Holders) != 1 || info.Holders[0].Owner != "a" {
		t.Fatalf("read after catching up: %+v, %v", info, err)
	}
}

// A node that cannot reach a leader is not ready, and ready again once
// a quorum is back.
func TestReadyNoLeader(t *testing.T) {
	tc, _ := readyCluster(t, nil)
	survivor := tc.index(tc.follower())
	for i := range tc.nodes {
		if i != survivor {
			tc.kill(i)
		}
	}
	url := readyz(t, tc.nodes[survivor])
	waitNotReady(tc, tc.nodes[survivor], "no leader", func(err error) bool {
		return strings.Contains(err.Error(), "no leader known")
	})
	wantReadyz503(t, url, "no leader known")
	for i := range tc.nodes {
		if i != survivor {
			tc.restart(i)
		}
	}
	tc.leader(20 * time.Second)
	for _, n := range tc.nodes {
		waitReady(tc, n, readyz(t, n))
	}
}

// pauseApply holds n's table lock, so raft's FSM goroutine stops in
// ApplyBatch while the node goes on storing entries; the returned
// function (idempotent) lets it go on.
func pauseApply(n *Node) (release func()) {
	n.mu.Lock()
	var once sync.Once
	return func() { once.Do(n.mu.Unlock) }
}

// Concurrent probes share one evaluation: a flood of GET /readyz (which
// needs no credentials) on a follower sends the leader a handful of
// read index requests, not one each, and every probe gets the answer.
func TestReadyShared(t *testing.T) {
	tc, _ := readyCluster(t, nil)
	f := tc.follower()
	// Forget the evaluations readyCluster waited for.
	f.readyShare.mu.Lock()
	f.readyShare.cur = nil
	f.readyShare.mu.Unlock()
	before := counter(t, f, f.metrics.forwardCalls, "read_index")
	const probes = 200
	var wg sync.WaitGroup
	errs := make(chan error, probes)
	start := make(chan struct{})
	for range probes {
		wg.Add(1)
		// Ends when Ready returns (within about ReadyMaxLag).
		go func() {
			defer wg.Done()
			<-start
			errs <- f.Ready(context.Background())
		}()
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("probe: %v", err)
		}
	}
	// Each evaluation answers the probes that arrive while it runs and
	// for readyReuse after; all 200 start at once.
	if n := counter(t, f, f.metrics.forwardCalls, "read_index") - before; n < 1 || n > 10 {
		t.Fatalf("%d probes sent %v read index requests, want 1 to 10", probes, n)
	}
}
