package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/client"
	"github.com/locknode/locknode/httpapi/httpapitest"
	"github.com/locknode/locknode/testcluster"
)

// TestLockMetadata: a hold carries this process's host and pid unless
// turned off, plus WithMetadata's entries (which win over the defaults);
// metadata past the limits is refused before anything is sent.
func TestLockMetadata(t *testing.T) {
	ctx := context.Background()
	host, _ := os.Hostname()
	pid := strconv.Itoa(os.Getpid())
	fake := httpapitest.NewFake()
	url := httpapitest.NewServer(t, fake).URL
	c := newClient(t, url)
	quiet, err := client.New(client.Config{Endpoints: []string{url}, NoDefaultMetadata: true})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		c    *client.Client
		opts []client.LockOption
		want map[string]string
	}{
		{"defaults", c, nil, map[string]string{"host": host, "pid": pid}},
		{"more", c, []client.LockOption{client.WithMetadata(map[string]string{"job": "nightly"}), client.WithMetadata(map[string]string{"ticket": "T-1"})},
			map[string]string{"host": host, "pid": pid, "job": "nightly", "ticket": "T-1"}},
		{"given names win", c, []client.LockOption{client.WithMetadata(map[string]string{"host": "elsewhere"})},
			map[string]string{"host": "elsewhere", "pid": pid}},
		{"defaults off", c, []client.LockOption{client.WithoutDefaultMetadata(), client.WithMetadata(map[string]string{"job": "x"})},
			map[string]string{"job": "x"}},
		{"defaults off for the client", quiet, nil, nil},
		{"shared", c, []client.LockOption{client.WithShared(), client.WithMetadata(map[string]string{"job": "y"})},
			map[string]string{"host": host, "pid": pid, "job": "y"}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			key := "meta/" + strconv.Itoa(i)
			l, err := tc.c.Lock(ctx, key, tc.opts...)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Unlock(ctx)
			info, err := c.Inspect(ctx, key, api.ReadOptions{})
			if err != nil || len(info.Holders) != 1 {
				t.Fatalf("%+v %v", info, err)
			}
			if got := info.Holders[0].Meta; !reflect.DeepEqual(got, tc.want) && !(len(got) == 0 && len(tc.want) == 0) {
				t.Fatalf("meta %v, want %v", got, tc.want)
			}
			if info.Holders[0].GrantedMs == 0 {
				t.Fatalf("no grant time: %+v", info.Holders[0])
			}
		})
	}

	before := fake.Calls("Acquire") + fake.Calls("TryAcquire")
	big := map[string]string{"note": strings.Repeat("x", api.DefaultMaxMetaValueBytes+1)}
	if _, err := c.Lock(ctx, "meta/big", client.WithMetadata(big)); !errors.Is(err, api.ErrLimit) {
		t.Fatalf("oversized metadata: %v", err)
	}
	if _, err := c.TryAcquire(ctx, api.AcquireRequest{Key: "meta/big", Owner: "o", TTLMs: 1000, Meta: big}); !errors.Is(err, api.ErrLimit) {
		t.Fatalf("oversized metadata: %v", err)
	}
	if n := fake.Calls("Acquire") + fake.Calls("TryAcquire"); n != before {
		t.Fatalf("refused metadata reached the server: %d more acquires", n-before)
	}
}

// TestAcquireMetadata: the api.Locker methods add the defaults too,
// unless the context says not to.
func TestAcquireMetadata(t *testing.T) {
	ctx := context.Background()
	fake := httpapitest.NewFake()
	c := newClient(t, httpapitest.NewServer(t, fake).URL)
	if _, err := c.TryAcquire(ctx, api.AcquireRequest{Key: "a", Owner: "o", TTLMs: 10000, Meta: map[string]string{"job": "j"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Acquire(api.WithoutDefaultMeta(ctx), api.AcquireRequest{Key: "b", Owner: "o", TTLMs: 10000, WaitMs: 1000}); err != nil {
		t.Fatal(err)
	}
	a, _ := c.Inspect(ctx, "a", api.ReadOptions{})
	b, _ := c.Inspect(ctx, "b", api.ReadOptions{})
	if m := a.Holders[0].Meta; m["job"] != "j" || m["pid"] != strconv.Itoa(os.Getpid()) {
		t.Fatalf("a: %v", m)
	}
	if m := b.Holders[0].Meta; len(m) != 0 {
		t.Fatalf("b: %v", m)
	}
}

// TestCoalescingKeepsEachCallersMetadata: Lock calls of one Client that
// differ in metadata do not share a server waiter, so each hold carries
// what its caller asked for.
func TestCoalescingKeepsEachCallersMetadata(t *testing.T) {
	ctx := context.Background()
	fake := httpapitest.NewFake()
	c := newClient(t, httpapitest.NewServer(t, fake).URL)
	first, err := c.Lock(ctx, "k", client.WithMetadata(map[string]string{"job": "1"}))
	if err != nil {
		t.Fatal(err)
	}
	type res struct {
		l   *client.Lock
		err error
	}
	got := make(chan res, 2)
	for _, job := range []string{"2", "3"} {
		go func() { // ends when granted (after the releases below) or at the wait
			l, err := c.Lock(ctx, "k", client.WithMetadata(map[string]string{"job": job}), client.WithWait(20*time.Second))
			got <- res{l, err}
		}()
	}
	waitFor(t, "two server waiters", func() bool { return fake.Waiters() == 2 })
	if err := first.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for range 2 {
		r := <-got
		if r.err != nil {
			t.Fatal(r.err)
		}
		info, err := c.Inspect(ctx, "k", api.ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		seen[info.Holders[0].Meta["job"]] = true
		if err := r.l.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if !seen["2"] || !seen["3"] {
		t.Fatalf("holds carried %v", seen)
	}
}

// TestMetadataEndToEnd: on a 3-node cluster, a hold taken through one
// node shows its metadata and times in another node's JSON (GET
// /v1/locks/{key}); a waiter shows its own; an HTTP acquire without
// metadata shows none (the node adds no metadata of its own process).
func TestMetadataEndToEnd(t *testing.T) {
	tc := testcluster.New(t, 3, testcluster.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	li, err := tc.WaitLeader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	other := (li + 1) % 3
	viaLeader, err := client.New(client.Config{Endpoints: []string{"http://" + tc.HTTPAddr(li)}})
	if err != nil {
		t.Fatal(err)
	}
	before := time.Now().UnixMilli()
	l, err := viaLeader.Lock(ctx, "jobs/nightly", client.WithMetadata(map[string]string{"job": "backup"}))
	if err != nil {
		t.Fatal(err)
	}
	after := time.Now().UnixMilli()
	waiting := make(chan error, 1)
	go func() { // ends when granted after l.Unlock below, or at its wait
		l2, err := viaLeader.Lock(ctx, "jobs/nightly", client.WithoutDefaultMetadata(),
			client.WithMetadata(map[string]string{"job": "second"}), client.WithWait(20*time.Second))
		if err == nil {
			err = l2.Unlock(ctx)
		}
		waiting <- err
	}()

	get := func(key string) map[string]any {
		t.Helper()
		resp, err := http.Get("http://" + tc.HTTPAddr(other) + "/v1/locks/" + key)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&m); err != nil || resp.StatusCode != 200 {
			t.Fatalf("GET %s: %d %v", key, resp.StatusCode, err)
		}
		return m
	}
	var info map[string]any
	waitFor(t, "the waiter", func() bool {
		info = get("jobs/nightly")
		w, _ := info["waiters"].([]any)
		return len(w) == 1
	})
	h := info["holders"].([]any)[0].(map[string]any)
	host, _ := os.Hostname()
	meta, _ := h["meta"].(map[string]any)
	if meta["job"] != "backup" || meta["host"] != host || meta["pid"] != strconv.Itoa(os.Getpid()) {
		t.Fatalf("holder %v", h)
	}
	// Cluster time is within a second of wall time.
	if g, _ := h["granted_ms"].(float64); int64(g) < before-1000 || int64(g) > after+1000 {
		t.Fatalf("granted_ms %v, wall time %d..%d", h["granted_ms"], before, after)
	}
	w := info["waiters"].([]any)[0].(map[string]any)
	if wm, _ := w["meta"].(map[string]any); len(wm) != 1 || wm["job"] != "second" || w["queued_ms"].(float64) < h["granted_ms"].(float64) {
		t.Fatalf("waiter %v", w)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-waiting; err != nil {
		t.Fatal(err)
	}

	body := strings.NewReader(`{"key":"raw","owner":"curl","ttl_ms":10000}`)
	resp, err := http.Post("http://"+tc.HTTPAddr(other)+"/v1/locks/try", "application/json", body)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("raw try: %d", resp.StatusCode)
	}
	raw := get("raw")["holders"].([]any)[0].(map[string]any)
	if _, ok := raw["meta"]; ok || raw["granted_ms"].(float64) <= 0 {
		t.Fatalf("an HTTP acquire without metadata shows %v", raw)
	}
}
