package compat

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	rsredis "github.com/go-redsync/redsync/v4/redis"
	rsgoredis "github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/client"
	"github.com/locknode/locknode/httpapi"
)

// TestExtendAfterRelease: an extend by the token that has just released
// the lock fails on every surface (DESIGN.md "One key space"): the client
// must not be told it holds a lock that anyone may take next. Each case
// takes the lock, releases it, extends it with the same token, and then
// checks that the lock is free for another owner.
func TestExtendAfterRelease(t *testing.T) {
	tc := newCluster(t, 3)
	node := tc.node(0)
	srv := httptest.NewServer(httpapi.New(node, httpapi.Config{}))
	t.Cleanup(srv.Close)
	gc, err := client.New(client.Config{Endpoints: []string{srv.URL}})
	if err != nil {
		t.Fatal(err)
	}
	rc := []*redis.Client{goRedis(t, tc.resp[0], 3), goRedis(t, tc.resp[1], 3), goRedis(t, tc.resp[2], 2)}

	// locker returns the lock API of a native surface.
	lockerCase := func(l api.Locker) func(ctx context.Context, t *testing.T, key string) {
		return func(ctx context.Context, t *testing.T, key string) {
			if _, err := l.TryAcquire(ctx, api.AcquireRequest{Key: key, Owner: "tok", TTLMs: 10_000}); err != nil {
				t.Fatalf("acquire: %v", err)
			}
			if r, err := l.Release(ctx, api.ReleaseRequest{Key: key, Owner: "tok"}); err != nil || !r.Released {
				t.Fatalf("release: %+v %v", r, err)
			}
			if _, err := l.Extend(ctx, api.ExtendRequest{Key: key, Owner: "tok", TTLMs: 10_000}); !errors.Is(err, api.ErrNotHeld) {
				t.Fatalf("extend after release: %v; want api.ErrNotHeld", err)
			}
		}
	}
	cases := []struct {
		name string
		run  func(ctx context.Context, t *testing.T, key string)
	}{
		{"embedded", lockerCase(node)},
		{"go-client", lockerCase(gc)},
		{"http", func(ctx context.Context, t *testing.T, key string) {
			post := func(route, body string) int {
				t.Helper()
				resp, err := http.Post(srv.URL+route, "application/json", strings.NewReader(body))
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				return resp.StatusCode
			}
			if st := post("/v1/locks/acquire", `{"key":"`+key+`","owner":"tok","ttl_ms":10000}`); st != http.StatusOK {
				t.Fatalf("acquire: HTTP %d", st)
			}
			if st := post("/v1/locks/release", `{"key":"`+key+`","owner":"tok"}`); st != http.StatusOK {
				t.Fatalf("release: HTTP %d", st)
			}
			if st := post("/v1/locks/extend", `{"key":"`+key+`","owner":"tok","ttl_ms":10000}`); st != http.StatusNotFound {
				t.Fatalf("extend after release: HTTP %d; want 404", st)
			}
		}},
		{"bsm-redislock", func(ctx context.Context, t *testing.T, key string) {
			l, err := redislock.New(rc[0]).Obtain(ctx, key, 10*time.Second, nil)
			if err != nil {
				t.Fatalf("Obtain: %v", err)
			}
			if err := l.Release(ctx); err != nil {
				t.Fatalf("Release: %v", err)
			}
			// The repeated release keeps its tombstone answer (Redlock quorum).
			if err := l.Release(ctx); err != nil {
				t.Fatalf("repeated Release: %v", err)
			}
			if err := l.Refresh(ctx, 10*time.Second, nil); !errors.Is(err, redislock.ErrNotObtained) {
				t.Fatalf("Refresh after Release: %v; want ErrNotObtained", err)
			}
		}},
		{"redsync", func(ctx context.Context, t *testing.T, key string) {
			var pools []rsredis.Pool
			for _, c := range rc {
				pools = append(pools, rsgoredis.NewPool(c))
			}
			m := redsync.New(pools...).NewMutex(key, redsync.WithExpiry(10*time.Second), redsync.WithTries(1))
			if err := m.LockContext(ctx); err != nil {
				t.Fatalf("Lock: %v", err)
			}
			if ok, err := m.UnlockContext(ctx); err != nil || !ok {
				t.Fatalf("Unlock: %v %v", ok, err)
			}
			if ok, err := m.ExtendContext(ctx); err == nil || ok {
				t.Fatalf("Extend after Unlock: %v %v; want failure", ok, err)
			}
		}},
		{"resp-lock-commands", func(ctx context.Context, t *testing.T, key string) {
			if err := rc[1].Do(ctx, "LOCK.ACQUIRE", key, "tok", 10000).Err(); err != nil {
				t.Fatalf("LOCK.ACQUIRE: %v", err)
			}
			if err := rc[1].Do(ctx, "LOCK.RELEASE", key, "tok").Err(); err != nil {
				t.Fatalf("LOCK.RELEASE: %v", err)
			}
			if err := rc[1].Do(ctx, "LOCK.EXTEND", key, "tok", 10000).Err(); err == nil || !strings.HasPrefix(err.Error(), "NOTHELD") {
				t.Fatalf("LOCK.EXTEND after release: %v; want NOTHELD", err)
			}
		}},
		{"resp-pexpire", func(ctx context.Context, t *testing.T, key string) {
			if ok, err := rc[2].SetNX(ctx, key, "tok", 10*time.Second).Result(); err != nil || !ok {
				t.Fatalf("SET NX: %v %v", ok, err)
			}
			if n, err := rc[2].Del(ctx, key).Result(); err != nil || n != 1 {
				t.Fatalf("DEL: %d %v", n, err)
			}
			if ok, err := rc[2].PExpire(ctx, key, 10*time.Second).Result(); err != nil || ok {
				t.Fatalf("PEXPIRE after DEL: %v %v; want false", ok, err)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := ctxT(t, 20*time.Second)
			key := uniq("extend-after-release-" + c.name)
			c.run(ctx, t, key)
			// Nobody holds it: another owner takes it at once.
			if _, err := node.TryAcquire(ctx, api.AcquireRequest{Key: key, Owner: "next", TTLMs: 1000}); err != nil {
				t.Fatalf("another owner after the extend: %v; want the lock free", err)
			}
		})
	}
}
