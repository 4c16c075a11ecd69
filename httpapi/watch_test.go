package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/cluster"
	"github.com/locknode/locknode/httpapi"
	"github.com/locknode/locknode/testcluster"
	"github.com/locknode/locknode/wire"
)

var (
	_ httpapi.ChangeWaiter = (*cluster.Node)(nil)
	_ httpapi.ChangeWaiter = (*cluster.Local)(nil)
)

// watchAnswer is one answer to a lock read.
type watchAnswer struct {
	status int
	header uint64 // X-Locknode-Index
	info   api.LockInfo
	body   string
	took   time.Duration
	err    error
}

// getLock reads base+/v1/locks/key with query q.
func getLock(ctx context.Context, base, key, q string) watchAnswer {
	start := time.Now()
	u := base + wire.PathLockPrefix + url.PathEscape(key)
	if q != "" {
		u += "?" + q
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return watchAnswer{err: err}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return watchAnswer{err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	a := watchAnswer{status: resp.StatusCode, body: string(b), took: time.Since(start), err: err}
	a.header, _ = strconv.ParseUint(resp.Header.Get(wire.HeaderIndex), 10, 64)
	if resp.StatusCode == http.StatusOK {
		a.err = json.Unmarshal(b, &a.info)
	}
	return a
}

// watchAsync runs a blocking query in the background.
func watchAsync(ctx context.Context, base, key string, index uint64, wait string) <-chan watchAnswer {
	ch := make(chan watchAnswer, 1)
	// Ends when the request is answered or ctx ends.
	go func() { ch <- getLock(ctx, base, key, fmt.Sprintf("index=%d&wait=%s", index, wait)) }()
	return ch
}

func waitCount(t *testing.T, what string, count func() int, want int) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for count() != want {
		if time.Now().After(deadline) {
			t.Fatalf("%s = %d, want %d", what, count(), want)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// TestBlockingQueryOnFollower: a watcher on a follower sees, within a
// bounded time, a hold granted, released, expired and force-released
// on the leader, each answered with the index of that change; the
// current index waits, an older one answers at once.
func TestBlockingQueryOnFollower(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{NoRESP: true})
	ctx := t.Context()
	lead := c.LeaderIndex()
	f := (lead + 1) % 3
	base := "http://" + c.HTTPAddr(f)
	follower := c.Node(f)
	leader := c.Locker(lead)
	const key = "jobs/watched"
	const bound = 5 * time.Second // a change reaches the watcher within this

	// A plain read of a free key stays 404, with the index.
	first := getLock(ctx, base, key, "")
	if first.status != 404 || first.body == "" {
		t.Fatalf("plain read of a free key: %+v", first)
	}
	last := first.header
	step := func(name string, change func(), want string) api.LockInfo {
		t.Helper()
		ch := watchAsync(ctx, base, key, last, "30s")
		start := time.Now()
		if change != nil {
			// The watcher waits before the change is made. (An expiry
			// may come before it waits: it is then answered at once.)
			waitCount(t, "follower watchers", follower.KeyWatchers, 1)
			start = time.Now()
			change()
		}
		var a watchAnswer
		select {
		case a = <-ch:
		case <-time.After(bound + time.Since(start)):
			t.Fatalf("%s: the watcher was not answered within %v", name, bound)
		}
		if a.err != nil || a.status != 200 {
			t.Fatalf("%s: %+v", name, a)
		}
		if a.info.State != want || a.info.Index <= last || a.header != a.info.Index {
			t.Fatalf("%s: state %q index %d (header %d), want %q after index %d", name, a.info.State, a.info.Index, a.header, want, last)
		}
		t.Logf("%s: answered in %v at index %d", name, time.Since(start), a.info.Index)
		last = a.info.Index
		return a.info
	}

	// Granted.
	var lease api.Lease
	info := step("granted", func() {
		var err error
		if lease, err = leader.TryAcquire(ctx, api.AcquireRequest{Key: key, Owner: "a", TTLMs: 60000}); err != nil {
			t.Fatal(err)
		}
	}, api.StateHeld)
	if len(info.Holders) != 1 || info.Holders[0].Fence != lease.Fence {
		t.Fatalf("granted: holders %+v, want fence %d", info.Holders, lease.Fence)
	}

	// The current index waits for its wait; an older one answers at once.
	if a := getLock(ctx, base, key, fmt.Sprintf("index=%d&wait=300ms", last)); a.status != 200 || a.took < 300*time.Millisecond || a.info.Index != last || a.info.State != api.StateHeld {
		t.Fatalf("current index: status %d after %v, index %d (want %d after at least 300ms)", a.status, a.took, a.info.Index, last)
	}
	if a := getLock(ctx, base, key, fmt.Sprintf("index=%d&wait=60s", last-1)); a.status != 200 || a.took > 10*time.Second || a.info.Index != last {
		t.Fatalf("older index: status %d after %v, index %d (want %d at once)", a.status, a.took, a.info.Index, last)
	}

	// Released.
	step("released", func() {
		if _, err := leader.Release(ctx, api.ReleaseRequest{Key: key, Owner: "a"}); err != nil {
			t.Fatal(err)
		}
	}, api.StateFree)

	// Expired: its TTL runs out on the leader, with no request.
	step("granted again", func() {
		if _, err := leader.TryAcquire(ctx, api.AcquireRequest{Key: key, Owner: "b", TTLMs: 300}); err != nil {
			t.Fatal(err)
		}
	}, api.StateHeld)
	step("expired", nil, api.StateFree)

	// Force-released.
	step("granted a third time", func() {
		if _, err := leader.TryAcquire(ctx, api.AcquireRequest{Key: key, Owner: "c", TTLMs: 60000}); err != nil {
			t.Fatal(err)
		}
	}, api.StateHeld)
	step("force-released", func() {
		if _, err := leader.Release(ctx, api.ReleaseRequest{Key: key, Force: true}); err != nil {
			t.Fatal(err)
		}
	}, api.StateFree)

	// The list answers the prefix's index and blocks the same way.
	lctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(lctx, http.MethodGet, base+wire.PathLocks+"?prefix=jobs/&index="+strconv.FormatUint(last, 10)+"&wait=20s", nil)
	got := make(chan *http.Response, 1)
	// Ends when the list is answered or lctx ends.
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			got <- nil
			return
		}
		got <- resp
	}()
	waitCount(t, "follower watchers", follower.KeyWatchers, 1)
	if _, err := leader.TryAcquire(ctx, api.AcquireRequest{Key: "jobs/other", Owner: "d", TTLMs: 60000}); err != nil {
		t.Fatal(err)
	}
	resp := <-got
	if resp == nil {
		t.Fatal("list: no answer")
	}
	defer resp.Body.Close()
	var lr api.ListResult
	if err := json.NewDecoder(resp.Body).Decode(&lr); err != nil || resp.StatusCode != 200 || lr.Index <= last || len(lr.Locks) != 1 {
		t.Fatalf("blocking list: %d %+v %v, want jobs/other after index %d", resp.StatusCode, lr, err, last)
	}
	if h := resp.Header.Get(wire.HeaderIndex); h != strconv.FormatUint(lr.Index, 10) {
		t.Fatalf("list header %q, body index %d", h, lr.Index)
	}
}

// TestBlockingQueryLimits: past MaxWatchers a blocking query is refused
// with 503 too_many_watchers; a client that goes away frees its place;
// bad parameters are refused with 400.
func TestBlockingQueryLimits(t *testing.T) {
	l, err := cluster.NewLocal(cluster.LocalConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	srv := httptest.NewServer(httpapi.New(l, httpapi.Config{MaxWatchers: 2}))
	defer srv.Close()
	ctx := t.Context()

	cur := getLock(ctx, srv.URL, "k", "").header
	wctx, cancel := context.WithCancel(ctx)
	defer cancel() // before srv.Close, which waits for open requests
	w1 := watchAsync(wctx, srv.URL, "k", cur, "5m")
	w2 := watchAsync(wctx, srv.URL, "other", cur, "5m")
	waitCount(t, "watchers", l.KeyWatchers, 2)
	a := getLock(ctx, srv.URL, "k", fmt.Sprintf("index=%d&wait=5m", cur))
	var eb api.ErrorBody
	if a.status != http.StatusServiceUnavailable || json.Unmarshal([]byte(a.body), &eb) != nil || eb.Code != wire.CodeTooManyWatchers {
		t.Fatalf("third watcher over a cap of 2: %d %s", a.status, a.body)
	}
	// A plain read is not a watcher, nor a query already behind.
	if a := getLock(ctx, srv.URL, "k", ""); a.status != 404 {
		t.Fatalf("a read at the cap: %d %s", a.status, a.body)
	}
	if _, err := l.TryAcquire(ctx, api.AcquireRequest{Key: "x", Owner: "o", TTLMs: 60000}); err != nil {
		t.Fatal(err)
	}
	if a := getLock(ctx, srv.URL, "x", "index=0"); a.status != 200 || a.info.State != api.StateHeld {
		t.Fatalf("a read at the cap: %d %s", a.status, a.body)
	}
	// The clients go away: their watchers end.
	cancel()
	<-w1
	<-w2
	waitCount(t, "watchers", l.KeyWatchers, 0)
	// And their places are free again.
	wctx2, cancel2 := context.WithCancel(ctx)
	defer cancel2()
	w3 := watchAsync(wctx2, srv.URL, "k", cur, "5m")
	waitCount(t, "watchers", l.KeyWatchers, 1)
	if _, err := l.TryAcquire(ctx, api.AcquireRequest{Key: "k", Owner: "o", TTLMs: 10000}); err != nil {
		t.Fatal(err)
	}
	if a := <-w3; a.status != 200 || a.info.State != api.StateHeld || a.info.Index <= cur {
		t.Fatalf("watcher after the cap freed: %+v", a)
	}

	for _, q := range []string{"index=abc", "index=-1", "index=1.5", "index=1&wait=soon", "index=1&wait=-1s",
		"index=1&wait=11m", "index=1&wait=10", "wait=10s", "index=1&index=2"} {
		a := getLock(ctx, srv.URL, "k", q)
		if a.status != http.StatusBadRequest || json.Unmarshal([]byte(a.body), &eb) != nil || eb.Code != api.CodeBadRequest {
			t.Errorf("?%s: %d %s, want 400 bad_request", q, a.status, a.body)
		}
		lreq, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+wire.PathLocks+"?"+q, nil)
		resp, err := http.DefaultClient.Do(lreq)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("list ?%s: %d, want 400", q, resp.StatusCode)
		}
	}
	lreq, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+wire.PathLocks+"?index=1&prefix="+strings.Repeat("p", 513), nil)
	resp, err := http.DefaultClient.Do(lreq)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("a blocking list with a prefix longer than any key: %d, want 400", resp.StatusCode)
	}
	if l.KeyWatchers() != 0 {
		t.Fatalf("watchers = %d after the bad queries", l.KeyWatchers())
	}
}
