package client_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/client"
	"github.com/locknode/locknode/httpapi/httpapitest"
)

// The handle's deadlines are the point of these tests, so they run in a
// synctest bubble: virtual time, the fake's leases and the client's
// timers on one clock, requests through an in-process transport. A loaded
// machine cannot stall them into failing, and the times asserted are
// exact.

func bubbleClient(t *testing.T) (*client.Client, *httpapitest.Fake, *httpapitest.Transport) {
	t.Helper()
	fake := httpapitest.NewFake()
	// Its tick loop must end inside the bubble.
	t.Cleanup(func() { _ = fake.Close() })
	tr := httpapitest.NewTransport(fake)
	c, err := client.New(client.Config{
		Endpoints:      []string{"http://fake.invalid"},
		HTTPClient:     &http.Client{Transport: tr},
		Retry:          client.RetryPolicy{MaxAttempts: 3, BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond},
		RequestTimeout: time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	return c, fake, tr
}

func TestLockRenewsPastItsTTL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, fake, _ := bubbleClient(t)
		const ttl = 300 * time.Millisecond
		l, err := c.Lock(context.Background(), "k", client.WithTTL(ttl))
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(10*ttl + ttl/6) // renewals at every TTL/3: 30 of them
		synctest.Wait()
		if n := fake.Calls("Extend"); n != 30 {
			t.Fatalf("%d renewals in 10 TTLs, want 30", n)
		}
		if l.State() != client.Held || l.Context().Err() != nil {
			t.Fatalf("state %v, ctx %v", l.State(), l.Context().Err())
		}
		if owner, fence, ok := fake.Holder("k"); !ok || owner != l.Owner() || fence != l.Fence() {
			t.Fatalf("server holder %q/%d, handle %q/%d", owner, fence, l.Owner(), l.Fence())
		}
		if err := l.Unlock(context.Background()); err != nil {
			t.Fatal(err)
		}
		if _, _, ok := fake.Holder("k"); ok {
			t.Fatal("still held after Unlock")
		}
		if l.State() != client.Released || !errors.Is(context.Cause(l.Context()), client.ErrUnlocked) {
			t.Fatalf("after unlock: %v %v", l.State(), context.Cause(l.Context()))
		}
		select {
		case <-l.Lost():
		default:
			t.Fatal("Lost() not closed after Unlock")
		}
		if err := l.Unlock(context.Background()); !errors.Is(err, api.ErrNotHeld) {
			t.Fatalf("second Unlock: %v", err)
		}
	})
}

// The heart of the handle: when the cluster becomes unreachable, the
// handle enters Jeopardy and then Lost while the server still holds the
// lock for it — before anyone else could be granted it.
func TestJeopardyAndLostComeBeforeTheServerDeadline(t *testing.T) {
	for _, mode := range []struct {
		name string
		m    int32
	}{{"connections refused", httpapitest.Down}, {"requests hang", httpapitest.Hang}} {
		t.Run(mode.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c, fake, tr := bubbleClient(t)
				const ttl = 600 * time.Millisecond
				const margin = ttl / 10 // the default drift margin
				t0 := time.Now()
				l, err := c.Lock(context.Background(), "k", client.WithTTL(ttl))
				if err != nil {
					t.Fatal(err)
				}
				time.Sleep(ttl/3 + ttl/6) // one renewal, sent at t0 + TTL/3
				synctest.Wait()
				lastSend := t0.Add(ttl / 3)
				if fake.Calls("Extend") != 1 {
					t.Fatalf("%d renewals", fake.Calls("Extend"))
				}
				tr.SetMode(mode.m)
				serverDeadline := lastSend.Add(ttl) // the fake applied it at once

				safe := lastSend.Add(ttl - margin)
				<-l.Context().Done()
				if at := time.Now(); !at.Equal(safe.Add(-ttl / 3)) {
					t.Fatalf("Jeopardy at %v, want safe deadline - TTL/3 = %v", at.Sub(t0), safe.Add(-ttl/3).Sub(t0))
				}
				if l.State() != client.Jeopardy || !errors.Is(context.Cause(l.Context()), client.ErrJeopardy) {
					t.Fatalf("state %v cause %v", l.State(), context.Cause(l.Context()))
				}
				if owner, _, ok := fake.Holder("k"); !ok || owner != l.Owner() {
					t.Fatal("the server dropped the hold before Jeopardy")
				}
				<-l.Lost()
				if at := time.Now(); !at.Equal(safe) || !at.Before(serverDeadline) {
					t.Fatalf("Lost at %v, want the safe deadline %v (server's: %v)", at.Sub(t0), safe.Sub(t0), serverDeadline.Sub(t0))
				}
				if owner, _, ok := fake.Holder("k"); !ok || owner != l.Owner() {
					t.Fatal("the server dropped the hold before Lost")
				}
				if l.State() != client.Lost {
					t.Fatalf("state %v", l.State())
				}
				time.Sleep(time.Until(serverDeadline))
				// The server's tick at the deadline ends the hold; a read
				// never calls it ended before a committed entry did.
				synctest.Wait()
				if _, _, ok := fake.Holder("k"); ok {
					t.Fatal("the fake did not enforce the lease")
				}
				if fake.Calls("Extend") != 1 {
					t.Fatal("a renewal reached the server while it was cut off")
				}
				synctest.Wait()
			})
		})
	}
}

func TestLostWhenTheServerSaysNotOwner(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, fake, _ := bubbleClient(t)
		const ttl = time.Second
		t0 := time.Now()
		l, err := c.Lock(context.Background(), "k", client.WithTTL(ttl))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := fake.Release(context.Background(), api.ReleaseRequest{Key: "k", Force: true}); err != nil {
			t.Fatal(err)
		}
		<-l.Lost()
		if at := time.Since(t0); at != ttl/3 {
			t.Fatalf("lost at %v, want at the first renewal (%v)", at, ttl/3)
		}
		if l.State() != client.Lost || !errors.Is(context.Cause(l.Context()), client.ErrLost) || !errors.Is(context.Cause(l.Context()), api.ErrNotHeld) {
			t.Fatalf("state %v cause %v", l.State(), context.Cause(l.Context()))
		}
		if err := l.Unlock(context.Background()); !errors.Is(err, api.ErrNotHeld) {
			t.Fatalf("unlock of a lost lock: %v", err)
		}
	})
}

func TestSessionKeepAliveAndEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		c, fake, tr := bubbleClient(t)
		const ttl = 900 * time.Millisecond
		s, err := c.NewSession(ctx, ttl)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(10*ttl + ttl/6)
		synctest.Wait()
		if n := fake.Calls("KeepAlive"); n != 30 {
			t.Fatalf("%d keep-alives in 10 TTLs, want 30", n)
		}
		select {
		case <-s.Done():
			t.Fatalf("session ended: %v", s.Err())
		default:
		}

		// The server ends it: Done closes, and holds bound to it are lost.
		// A hold bound to a session lives as long as the session, so the
		// lease's TTL is the session's remaining time: the lock asks for
		// the session's TTL, and its margin (a tenth of it) fits.
		l, err := c.Lock(ctx, "k", client.WithSession(s), client.WithTTL(ttl))
		if err != nil {
			t.Fatal(err)
		}
		fake.ExpireSession(s.ID())
		<-s.Done()
		if !errors.Is(s.Err(), client.ErrSessionEnd) || !errors.Is(s.Err(), api.ErrSessionExpired) {
			t.Fatalf("session err %v", s.Err())
		}
		<-l.Lost()
		if !errors.Is(context.Cause(l.Context()), client.ErrSessionEnd) {
			t.Fatalf("lock cause %v", context.Cause(l.Context()))
		}

		// Unreachable: it ends at its safe deadline, before the server's.
		s2, err := c.NewSession(ctx, ttl)
		if err != nil {
			t.Fatal(err)
		}
		t0 := time.Now()
		tr.SetMode(httpapitest.Down)
		<-s2.Done()
		if at := time.Since(t0); at != ttl-ttl/10 {
			t.Fatalf("session given up after %v, want TTL - margin", at)
		}
		if _, err := fake.KeepAlive(ctx, s2.ID()); err != nil {
			t.Fatalf("the server ended the session before the client did: %v", err)
		}

		// Close ends it on the server.
		tr.SetMode(httpapitest.Up)
		s3, err := c.NewSession(ctx, ttl)
		if err != nil {
			t.Fatal(err)
		}
		if err := s3.Close(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := fake.KeepAlive(ctx, s3.ID()); !errors.Is(err, api.ErrSessionExpired) {
			t.Fatalf("closed session still alive: %v", err)
		}
		if _, err := c.NewSession(ctx, time.Second, client.WithKeepAliveEvery(2*time.Second)); !errors.Is(err, api.ErrBadRequest) {
			t.Fatalf("keep-alive slower than the TTL accepted: %v", err)
		}
		synctest.Wait()
	})
}

// A hold bound to a session is granted the session's remaining time, not
// the TTL asked for: the handle renews, goes into jeopardy and applies its
// drift margin by what was granted, so it stays held as long as the
// session is kept alive.
func TestSessionLockAskingMoreThanTheSessionStaysHeld(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		c, fake, _ := bubbleClient(t)
		const sessionTTL = 900 * time.Millisecond
		s, err := c.NewSession(ctx, sessionTTL)
		if err != nil {
			t.Fatal(err)
		}
		l, err := c.Lock(ctx, "k", client.WithSession(s), client.WithTTL(10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if got := time.Duration(l.Lease().TTLMs) * time.Millisecond; got > sessionTTL {
			t.Fatalf("granted %v, more than the session's %v", got, sessionTTL)
		}
		time.Sleep(5 * sessionTTL)
		synctest.Wait()
		if l.State() != client.Held || l.Context().Err() != nil {
			t.Fatalf("after 5 session TTLs: state %v, cause %v", l.State(), context.Cause(l.Context()))
		}
		if owner, _, ok := fake.Holder("k"); !ok || owner != l.Owner() {
			t.Fatalf("server holder %q %v, want %q", owner, ok, l.Owner())
		}
		if err := l.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(ctx); err != nil {
			t.Fatal(err)
		}
	})
}

// slowAnswers delays every answer by delay (virtual time in a bubble).
type slowAnswers struct {
	next  http.RoundTripper
	delay time.Duration
}

func (s slowAnswers) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := s.next.RoundTrip(r)
	time.Sleep(s.delay)
	return resp, err
}

// A grant whose answer arrives after the hold's jeopardy point comes back
// with its Context already done: the caller never starts work that only
// the renewal loop, scheduled later, would stop (by then the lease may
// have gone to someone else). One answered in time comes back Held.
func TestLockGrantedLate(t *testing.T) {
	const ttl = 600 * time.Millisecond // margin 60 ms: safe at 540, jeopardy at 340
	for _, tc := range []struct {
		name   string
		delay  time.Duration
		doneAt bool
	}{
		{"in time", 100 * time.Millisecond, false},
		{"past the jeopardy point", 400 * time.Millisecond, true},
		{"past the safe deadline", 700 * time.Millisecond, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fake := httpapitest.NewFake()
				t.Cleanup(func() { _ = fake.Close() })
				c, err := client.New(client.Config{
					Endpoints:      []string{"http://fake.invalid"},
					HTTPClient:     &http.Client{Transport: slowAnswers{httpapitest.NewTransport(fake), tc.delay}},
					Retry:          client.RetryPolicy{MaxAttempts: 1},
					RequestTimeout: 2 * time.Second,
				})
				if err != nil {
					t.Fatal(err)
				}
				l, err := c.Lock(context.Background(), "k", client.WithTTL(ttl))
				if err != nil {
					t.Fatal(err)
				}
				// Checked at once: the renewal loop may not have run yet.
				if done := l.Context().Err() != nil; done != tc.doneAt || (l.State() == client.Held) == tc.doneAt {
					t.Fatalf("at return: state %v, context done %v; want done %v", l.State(), done, tc.doneAt)
				}
				_ = l.Unlock(context.Background())
				synctest.Wait()
			})
		})
	}
}
