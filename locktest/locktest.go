package locktest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/locknode/locknode/api"
)

// Run runs the conformance suite against the Lockers newLocker returns.
func Run(t *testing.T, newLocker func(t *testing.T) api.Locker) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := &suite{t: t, l: newLocker(t), id: randomID()}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			s.ctx = ctx
			c.run(s)
		})
	}
}

type suite struct {
	t   *testing.T
	l   api.Locker
	ctx context.Context
	id  string
}

// key and owner are unique to the subtest, so one Locker serves all.
func (s *suite) key(name string) string   { return "locktest/" + s.id + "/" + name }
func (s *suite) owner(name string) string { return "owner-" + s.id + "-" + name }

func randomID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func (s *suite) try(key, owner string, ttl time.Duration) (api.Lease, error) {
	return s.l.TryAcquire(s.ctx, api.AcquireRequest{Key: key, Owner: owner, TTLMs: ttl.Milliseconds()})
}

func (s *suite) mustTry(key, owner string, ttl time.Duration) api.Lease {
	s.t.Helper()
	l, err := s.try(key, owner, ttl)
	if err != nil {
		s.t.Fatalf("TryAcquire(%s, %s): %v", key, owner, err)
	}
	if l.Fence == 0 || l.Owner != owner {
		s.t.Fatalf("TryAcquire(%s, %s): lease %+v", key, owner, l)
	}
	return l
}

func (s *suite) release(key, owner string) (api.ReleaseResult, error) {
	return s.l.Release(s.ctx, api.ReleaseRequest{Key: key, Owner: owner})
}

func (s *suite) mustRelease(key, owner string) {
	s.t.Helper()
	if r, err := s.release(key, owner); err != nil || !r.Released {
		s.t.Fatalf("Release(%s, %s): %+v %v", key, owner, r, err)
	}
}

func (s *suite) wantErr(what string, err, want error) {
	s.t.Helper()
	if !errors.Is(err, want) {
		s.t.Fatalf("%s: err = %v, want %v", what, err, want)
	}
}

// eventually polls cond until it holds or 10s pass. Polling the lock
// service is the observation here, not a synchronisation sleep.
func (s *suite) eventually(what string, cond func() bool) {
	s.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			s.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// async runs f in a goroutine; the returned channel yields its result.
func async[T any](f func() (T, error)) <-chan result[T] {
	ch := make(chan result[T], 1)
	// Ends when f returns; f is bounded by the suite's context.
	go func() {
		v, err := f()
		ch <- result[T]{v, err}
	}()
	return ch
}

type result[T any] struct {
	v   T
	err error
}

func (s *suite) recv(what string, ch <-chan result[api.Lease]) result[api.Lease] {
	s.t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(15 * time.Second):
		s.t.Fatalf("%s: no answer", what)
		return result[api.Lease]{}
	}
}

// queued waits until key shows n waiters.
func (s *suite) queued(key string, n int) {
	s.t.Helper()
	s.eventually(fmt.Sprintf("%d waiters on %s", n, key), func() bool {
		info, err := s.l.Inspect(s.ctx, key, api.ReadOptions{})
		return err == nil && len(info.Waiters) == n
	})
}
