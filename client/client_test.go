package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/client"
	"github.com/locknode/locknode/httpapi/httpapitest"
)

func newClient(t *testing.T, endpoints ...string) *client.Client {
	t.Helper()
	c, err := client.New(client.Config{
		Endpoints:      endpoints,
		Retry:          client.RetryPolicy{MaxAttempts: 6, BaseDelay: time.Millisecond, MaxDelay: 10 * time.Millisecond},
		RequestTimeout: 2 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// deadURL is an address nothing listens on (connection refused).
func deadURL(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func TestConfigValidate(t *testing.T) {
	bad := []client.Config{
		{},
		{Endpoints: []string{"localhost:80"}},
		{Endpoints: []string{"ftp://x"}},
		{Endpoints: []string{"http://x"}, RequestTimeout: -1},
		{Endpoints: []string{"http://x"}, Retry: client.RetryPolicy{MaxAttempts: -1}},
		{Endpoints: []string{"http://x"}, DriftMargin: -time.Second},
	}
	for _, cfg := range bad {
		if _, err := client.New(cfg); err == nil {
			t.Errorf("New(%+v) accepted", cfg)
		}
	}
}

func TestFailover(t *testing.T) {
	ctx := context.Background()
	t.Run("dead first endpoint", func(t *testing.T) {
		fake := httpapitest.NewFake()
		srv := httpapitest.NewServer(t, fake)
		c := newClient(t, deadURL(t), srv.URL)
		lease, err := c.Acquire(ctx, api.AcquireRequest{Key: "k", Owner: "o", TTLMs: 10000})
		if err != nil || lease.Fence == 0 {
			t.Fatalf("acquire through fail-over: %+v %v", lease, err)
		}
		if st, err := c.Status(ctx); err != nil || st.ID != "fake" {
			t.Fatalf("status: %+v %v", st, err)
		}
	})
	t.Run("first endpoint has no leader", func(t *testing.T) {
		f1, f2 := httpapitest.NewFake(), httpapitest.NewFake()
		f1.Fail(api.ErrNoLeader)
		s1, s2 := httpapitest.NewServer(t, f1), httpapitest.NewServer(t, f2)
		c := newClient(t, s1.URL, s2.URL)
		if _, err := c.TryAcquire(ctx, api.AcquireRequest{Key: "k", Owner: "o", TTLMs: 10000}); err != nil {
			t.Fatal(err)
		}
		if _, _, ok := f2.Holder("k"); !ok {
			t.Fatal("the second node did not get the acquire")
		}
		if f1.Calls("TryAcquire") != 1 {
			t.Fatalf("first node saw %d tries, want 1", f1.Calls("TryAcquire"))
		}
	})
	t.Run("everything down", func(t *testing.T) {
		c := newClient(t, deadURL(t), deadURL(t))
		_, err := c.TryAcquire(ctx, api.AcquireRequest{Key: "k", Owner: "o", TTLMs: 10000})
		if !errors.Is(err, api.ErrNoLeader) {
			t.Fatalf("err = %v, want ErrNoLeader", err)
		}
	})
	t.Run("no leader anywhere", func(t *testing.T) {
		fake := httpapitest.NewFake()
		fake.Fail(api.ErrNoLeader)
		c := newClient(t, httpapitest.NewServer(t, fake).URL)
		_, err := c.TryAcquire(ctx, api.AcquireRequest{Key: "k", Owner: "o", TTLMs: 10000})
		var e *client.Error
		if !errors.Is(err, api.ErrNoLeader) || !errors.As(err, &e) || e.Status != 503 {
			t.Fatalf("err = %v, want a 503 *Error wrapping ErrNoLeader", err)
		}
		if n := fake.Calls("TryAcquire"); n != 6 {
			t.Fatalf("%d attempts, want MaxAttempts = 6", n)
		}
	})
}

func TestRetriesReuseOneRequestID(t *testing.T) {
	ctx := context.Background()
	fake := httpapitest.NewFake()
	srv := httpapitest.NewServer(t, fake)
	c := newClient(t, srv.URL)

	// Each of the first two attempts is applied, then its answer is lost.
	srv.DropAnswers(2)
	lease, err := c.Acquire(ctx, api.AcquireRequest{Key: "k", Owner: "o", TTLMs: 10000, WaitMs: 1000})
	if err != nil {
		t.Fatal(err)
	}
	ids := fake.RequestIDs()
	if len(ids) != 3 || ids[0] == "" || ids[0] != ids[1] || ids[1] != ids[2] {
		t.Fatalf("request ids %q: want one id, three times", ids)
	}
	if owner, fence, _ := fake.Holder("k"); owner != "o" || fence != lease.Fence {
		t.Fatalf("holder %s/%d, lease %+v", owner, fence, lease)
	}

	// A release whose answer is lost must not turn into "not held" on retry.
	srv.DropAnswers(1)
	res, err := c.Release(ctx, api.ReleaseRequest{Key: "k", Owner: "o"})
	if err != nil || !res.Released {
		t.Fatalf("release after a lost answer: %+v %v", res, err)
	}
	ids = fake.RequestIDs()[3:]
	if len(ids) != 2 || ids[0] != ids[1] {
		t.Fatalf("release request ids %q", ids)
	}
	// A new logical operation gets a new id.
	if _, err := c.TryAcquire(ctx, api.AcquireRequest{Key: "k", Owner: "o", TTLMs: 10000}); err != nil {
		t.Fatal(err)
	}
	if all := fake.RequestIDs(); all[len(all)-1] == ids[0] || all[len(all)-1] == all[0] {
		t.Fatal("a new operation reused an old request id")
	}
}

func TestServerErrorsUnwrapToSentinels(t *testing.T) {
	ctx := context.Background()
	fake := httpapitest.NewFake()
	c := newClient(t, httpapitest.NewServer(t, fake).URL)
	if _, err := c.TryAcquire(ctx, api.AcquireRequest{Key: "k", Owner: "a", TTLMs: 10000}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		err  error
		want error
	}{
		{"locked", func() error {
			_, err := c.TryAcquire(ctx, api.AcquireRequest{Key: "k", Owner: "b", TTLMs: 1000})
			return err
		}(), api.ErrLocked},
		{"wait timeout", func() error {
			_, err := c.Acquire(ctx, api.AcquireRequest{Key: "k", Owner: "b", TTLMs: 1000, WaitMs: 10})
			return err
		}(), api.ErrWaitTimeout},
		{"not owner", func() error {
			_, err := c.Extend(ctx, api.ExtendRequest{Key: "k", Owner: "b", TTLMs: 1000})
			return err
		}(), api.ErrNotOwner},
		{"not held", func() error {
			_, err := c.Release(ctx, api.ReleaseRequest{Key: "zz", Owner: "b"})
			return err
		}(), api.ErrNotHeld},
		{"not found", func() error {
			_, err := c.Inspect(ctx, "zz", api.ReadOptions{})
			return err
		}(), api.ErrNotFound},
		{"session expired", func() error {
			_, err := c.KeepAlive(ctx, "nope")
			return err
		}(), api.ErrSessionExpired},
		{"bad request", func() error {
			_, err := c.TryAcquire(ctx, api.AcquireRequest{Key: "k", TTLMs: 1000})
			return err
		}(), api.ErrBadRequest},
	}
	for _, tc := range cases {
		if !errors.Is(tc.err, tc.want) {
			t.Errorf("%s: err = %v, want %v", tc.name, tc.err, tc.want)
		}
	}
}

// A key space past its memory limit answers 507 out_of_memory; the
// client gives it back as api.ErrOutOfMemory and does not retry it.
func TestOutOfMemoryUnwrapsToSentinel(t *testing.T) {
	ctx := context.Background()
	fake := httpapitest.NewFake()
	c := newClient(t, httpapitest.NewServer(t, fake).URL)
	fake.Fail(fmt.Errorf("%w: 2000 bytes used, limit 1000", api.ErrOutOfMemory))
	_, err := c.TryAcquire(ctx, api.AcquireRequest{Key: "k", Owner: "a", TTLMs: 10000})
	var e *client.Error
	if !errors.Is(err, api.ErrOutOfMemory) || !errors.As(err, &e) || e.Status != 507 || e.Code != api.CodeOutOfMemory {
		t.Fatalf("err = %v (%+v), want api.ErrOutOfMemory from a 507", err, e)
	}
	if n := len(fake.RequestIDs()); n != 1 {
		t.Fatalf("%d requests, want 1 (no retry)", n)
	}
}

func TestCancelledAcquireLeavesNoWaiter(t *testing.T) {
	fake := httpapitest.NewFake()
	c := newClient(t, httpapitest.NewServer(t, fake).URL)
	if _, err := fake.TryAcquire(context.Background(), api.AcquireRequest{Key: "k", Owner: "x", TTLMs: 60000}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	// Ends when Acquire returns after cancel.
	go func() {
		_, err := c.Acquire(ctx, api.AcquireRequest{Key: "k", Owner: "o", TTLMs: 1000})
		errc <- err
	}()
	waitFor(t, "the waiter to queue", func() bool { return fake.Waiters() == 1 })
	cancel()
	if err := <-errc; !errors.Is(err, api.ErrCancelled) || !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	waitFor(t, "the server waiter to go", func() bool { return fake.Waiters() == 0 })
}

func TestInspectListKeysWithOddCharacters(t *testing.T) {
	ctx := context.Background()
	fake := httpapitest.NewFake()
	c := newClient(t, httpapitest.NewServer(t, fake).URL)
	for _, key := range []string{"a/b", ".", "..", "x y?z#", "%41", "/lead", "ü"} {
		if _, err := c.TryAcquire(ctx, api.AcquireRequest{Key: key, Owner: "o", TTLMs: 60000}); err != nil {
			t.Fatalf("%q: %v", key, err)
		}
		info, err := c.Inspect(ctx, key, api.ReadOptions{Stale: true})
		if err != nil || info.Key != key {
			t.Fatalf("inspect %q: %+v %v", key, info, err)
		}
	}
	res, err := c.List(ctx, api.ListRequest{Prefix: "%", Limit: 5})
	if err != nil || len(res.Locks) != 1 || res.Locks[0].Key != "%41" {
		t.Fatalf("list: %+v %v", res, err)
	}
}

func TestObserveAndCampaign(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fake := httpapitest.NewFake()
	c := newClient(t, httpapitest.NewServer(t, fake).URL)
	s, err := c.NewSession(ctx, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	ch, err := c.Observe(ctx, "e")
	if err != nil {
		t.Fatal(err)
	}
	if ld := <-ch; ld.Value != "" {
		t.Fatalf("first observation %+v, want the election as it stands: no leader", ld)
	}
	ld1, err := c.Campaign(ctx, api.CampaignRequest{Election: "e", Value: "v1", Session: s.ID()})
	if err != nil {
		t.Fatal(err)
	}
	if ld := <-ch; ld.Value != "v1" {
		t.Fatalf("got %+v", ld)
	}
	if err := c.Resign(ctx, ld1); err != nil {
		t.Fatal(err)
	}
	if ld := <-ch; ld.Value != "" {
		t.Fatalf("got %+v", ld)
	}
	cancel()
	for range ch { // closed when ctx ends
	}
}

func TestFenceCheck(t *testing.T) {
	ctx := context.Background()
	c := newClient(t, httpapitest.NewServer(t, httpapitest.NewFake()).URL)
	// Tokens are granted fences: the registry refuses any above the highest.
	var f []uint64
	for _, k := range []string{"a", "b"} {
		l, err := c.TryAcquire(ctx, api.AcquireRequest{Key: k, Owner: "o", TTLMs: 60000})
		if err != nil {
			t.Fatal(err)
		}
		f = append(f, l.Fence)
	}
	if r, err := c.FenceCheck(ctx, "db", f[1]+1); !errors.Is(err, api.ErrBadRequest) {
		t.Fatalf("token above the highest fence: %+v %v", r, err)
	}
	if r, err := c.FenceCheck(ctx, "db", f[1]); err != nil || !r.OK {
		t.Fatalf("%+v %v", r, err)
	}
	if r, err := c.FenceCheck(ctx, "db", f[0]); err != nil || r.OK || r.Highest != f[1] {
		t.Fatalf("%+v %v", r, err)
	}
}

func TestMiddleware(t *testing.T) {
	fake := httpapitest.NewFake()
	c := newClient(t, httpapitest.NewServer(t, fake).URL)
	var mu sync.Mutex
	var seenHolder string
	app := httptest.NewServer(client.Middleware(c, func(r *http.Request) string { return r.URL.Query().Get("k") },
		client.WithTTL(5*time.Second))(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		owner, _, _ := fake.Holder("job")
		mu.Lock()
		seenHolder = owner
		mu.Unlock()
		w.WriteHeader(http.StatusTeapot)
	})))
	defer app.Close()

	get := func(url string) (int, api.ErrorBody) {
		resp, err := app.Client().Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var eb api.ErrorBody
		_ = json.NewDecoder(resp.Body).Decode(&eb)
		return resp.StatusCode, eb
	}
	if st, _ := get(app.URL + "?k=job"); st != http.StatusTeapot || seenHolder == "" {
		t.Fatalf("free lock: %d, holder during handler %q", st, seenHolder)
	}
	if _, _, held := fake.Holder("job"); held {
		t.Fatal("the middleware did not release the lock")
	}
	if _, err := fake.TryAcquire(context.Background(), api.AcquireRequest{Key: "job", Owner: "other", TTLMs: 60000}); err != nil {
		t.Fatal(err)
	}
	if st, eb := get(app.URL + "?k=job"); st != http.StatusLocked || eb.Code != api.CodeLocked {
		t.Fatalf("held lock: %d %+v", st, eb)
	}
	if st, _ := get(app.URL + "?k="); st != http.StatusTeapot {
		t.Fatalf("no key: %d", st)
	}

	// With a wait: blocks until the holder releases.
	waiting := httptest.NewServer(client.Middleware(c, func(*http.Request) string { return "job" },
		client.WithWait(5*time.Second))(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	})))
	defer waiting.Close()
	done := make(chan int, 1)
	// Ends when the request answers.
	go func() {
		resp, err := waiting.Client().Get(waiting.URL)
		if err != nil {
			done <- 0
			return
		}
		resp.Body.Close()
		done <- resp.StatusCode
	}()
	waitFor(t, "the middleware to wait", func() bool { return fake.Waiters() == 1 })
	if _, err := fake.Release(context.Background(), api.ReleaseRequest{Key: "job", Owner: "other"}); err != nil {
		t.Fatal(err)
	}
	if st := <-done; st != http.StatusNoContent {
		t.Fatalf("waited request: %d", st)
	}
}

func TestMembership(t *testing.T) {
	ctx := context.Background()
	fake := httpapitest.NewFake()
	c := newClient(t, httpapitest.NewServer(t, fake).URL)
	if err := c.AddVoter(ctx, "n2", "10.0.0.2:7000"); err != nil {
		t.Fatal(err)
	}
	if err := c.AddVoter(ctx, "n2", "10.0.0.3:7000"); !errors.Is(err, api.ErrConflict) {
		t.Fatalf("conflicting add: %v", err)
	}
	st, err := c.Status(ctx)
	if err != nil || len(st.Members) != 2 || st.Members[1].ID != "n2" {
		t.Fatalf("status %+v %v", st, err)
	}
	if err := c.RemoveServer(ctx, "n2"); err != nil {
		t.Fatal(err)
	}
	if err := c.RemoveServer(ctx, "n2"); !errors.Is(err, api.ErrNotFound) {
		t.Fatalf("second remove: %v", err)
	}
}

func TestObserveReconnectsToAnotherEndpoint(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fake := httpapitest.NewFake()
	s1, s2 := httpapitest.NewServer(t, fake), httpapitest.NewServer(t, fake)
	c := newClient(t, s1.URL, s2.URL)
	sess, err := fake.OpenSession(ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	ch, err := c.Observe(ctx, "e")
	if err != nil {
		t.Fatal(err)
	}
	if ld := <-ch; ld.Value != "" {
		t.Fatalf("first observation %+v, want the election as it stands: no leader", ld)
	}
	ld1, err := fake.Campaign(ctx, api.CampaignRequest{Election: "e", Value: "v1", Session: sess.ID})
	if err != nil {
		t.Fatal(err)
	}
	if ld := <-ch; ld.Value != "v1" {
		t.Fatalf("got %+v", ld)
	}
	// The first node dies: its stream breaks and it refuses new ones.
	s1.SetMode(httpapitest.Down)
	s1.CloseClientConnections()
	if err := fake.Resign(ctx, ld1); err != nil {
		t.Fatal(err)
	}
	if _, err := fake.Campaign(ctx, api.CampaignRequest{Election: "e", Value: "v2", Session: sess.ID}); err != nil {
		t.Fatal(err)
	}
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ld := <-ch:
			if ld.Value == "v1" {
				t.Fatalf("stale leader %+v after reconnecting", ld)
			}
			if ld.Value == "v2" {
				return
			}
		case <-timeout:
			t.Fatal("no leader change after the first node died")
		}
	}
}
