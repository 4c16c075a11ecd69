package testcluster

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/client"
)

// TestElectionKeyOnlyThroughElections: the owner string of an election's
// lock is public (Inspect and GET show it), so the plain lock API on HTTP
// and RESP must refuse to release, extend or take that key with it, or
// a reader could end a leadership behind its leader's back and let a
// second campaigner lead while the first still believes it does. A
// forced release (admin; anyone without users) is allowed, and the
// leader sees it: its Leadership.Done closes.
func TestElectionKeyOnlyThroughElections(t *testing.T) {
	c := New(t, 3, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := client.New(client.Config{Endpoints: c.Endpoints()})
	if err != nil {
		t.Fatal(err)
	}
	sess, err := cl.NewSession(ctx, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close(context.Background())
	ld, err := cl.Elect(ctx, "g", "me", sess)
	if err != nil {
		t.Fatal(err)
	}
	const key = api.ElectionPrefix + "g"
	info, err := cl.Inspect(ctx, key, api.ReadOptions{})
	if err != nil || len(info.Holders) != 1 {
		t.Fatalf("inspect: %+v %v", info, err)
	}
	owner := info.Holders[0].Owner // what any reader sees
	rc := redis.NewClient(&redis.Options{Addr: c.RESPAddr(1), Protocol: 2})
	defer rc.Close()

	refusals := []struct {
		name string
		do   func() error
	}{
		{"http release", func() error {
			_, err := cl.Release(ctx, api.ReleaseRequest{Key: key, Owner: owner})
			return err
		}},
		{"http extend", func() error {
			_, err := cl.Extend(ctx, api.ExtendRequest{Key: key, Owner: owner, TTLMs: 60000})
			return err
		}},
		{"http try", func() error {
			_, err := cl.TryAcquire(ctx, api.AcquireRequest{Key: key, Owner: owner, TTLMs: 60000})
			return err
		}},
		{"resp lock.release", func() error { return rc.Do(ctx, "LOCK.RELEASE", key, owner).Err() }},
		{"resp lock.extend", func() error { return rc.Do(ctx, "LOCK.EXTEND", key, owner, 60000).Err() }},
		{"resp compare-and-delete", func() error { return rc.Eval(ctx, casDelete, []string{key}, owner).Err() }},
		{"resp set", func() error { return rc.Set(ctx, key, "x", 0).Err() }},
		{"resp pexpire", func() error { return rc.PExpire(ctx, key, time.Minute).Err() }},
		{"resp getdel", func() error { return rc.GetDel(ctx, key).Err() }},
	}
	for _, r := range refusals {
		err := r.do()
		if err == nil || !(errors.Is(err, api.ErrForbidden) || strings.HasPrefix(err.Error(), "NOPERM")) {
			t.Errorf("%s: %v, want a permission error", r.name, err)
		}
	}
	if got, err := rc.Get(ctx, key).Result(); err != nil || got != owner {
		t.Fatalf("GET: %q %v (reads stay allowed)", got, err)
	}
	select {
	case <-ld.Done():
		t.Fatalf("leadership ended by a refused request: %v", ld.Err())
	default:
	}
	if info, err := cl.Inspect(ctx, key, api.ReadOptions{}); err != nil || len(info.Holders) != 1 || info.Holders[0].Owner != owner {
		t.Fatalf("the election's lock changed: %+v %v", info, err)
	}

	// An admin's forced release ends the leadership where its leader sees it.
	if n, err := rc.Del(ctx, key).Result(); err != nil || n != 1 {
		t.Fatalf("DEL (forced, admin): %d %v", n, err)
	}
	select {
	case <-ld.Done():
		if !errors.Is(ld.Err(), client.ErrLeadershipLost) {
			t.Fatalf("Err = %v, want ErrLeadershipLost", ld.Err())
		}
	case <-ctx.Done():
		t.Fatal("a forced release did not close Leadership.Done")
	}
}
