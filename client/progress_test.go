package client_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/client"
)

// A worker reports progress for a while, then wedges: the handle keeps the
// lock while progress comes, stops renewing once it has not come for the
// timeout, cancels Context with ErrNoProgress, and the lock ends by its
// lease so that another owner can take it.
func TestProgressTimeoutStopsRenewal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, fake, _ := bubbleClient(t)
		const ttl, timeout = 300 * time.Millisecond, 250 * time.Millisecond
		l, err := c.Lock(context.Background(), "k", client.WithTTL(ttl), client.WithProgressTimeout(timeout))
		if err != nil {
			t.Fatal(err)
		}
		defer l.Unlock(context.Background())
		for range 20 { // 2 s of work, progress every 100 ms
			time.Sleep(100 * time.Millisecond)
			l.Progress()
		}
		synctest.Wait()
		if l.State() != client.Held || l.Context().Err() != nil {
			t.Fatalf("while progressing: state %v, ctx %v", l.State(), context.Cause(l.Context()))
		}
		renewals := fake.Calls("Extend")
		if renewals < 6 {
			t.Fatalf("%d renewals in 2 s of progress with TTL %v", renewals, ttl)
		}

		wedged := time.Now() // no more Progress calls
		<-l.Context().Done()
		if took := time.Since(wedged); took != timeout {
			t.Fatalf("context ended %v after the last progress, want %v", took, timeout)
		}
		if cause := context.Cause(l.Context()); !errors.Is(cause, client.ErrNoProgress) {
			t.Fatalf("cause %v, want ErrNoProgress", cause)
		}
		if l.State() != client.Jeopardy {
			t.Fatalf("state %v after the timeout, want jeopardy", l.State())
		}
		l.Progress() // too late: must not restart renewal
		stalledAt := fake.Calls("Extend")
		<-l.Lost()
		if n := fake.Calls("Extend"); n != stalledAt {
			t.Fatalf("%d renewals after the progress timeout", n-stalledAt)
		}
		if l.State() != client.Lost || time.Now().After(wedged.Add(timeout+ttl)) {
			t.Fatalf("state %v at %v after wedging", l.State(), time.Since(wedged))
		}
		// The server still holds it until the lease ends; then it is free.
		if owner, _, ok := fake.Holder("k"); !ok || owner != l.Owner() {
			t.Fatalf("holder at the safe deadline %q, want the handle's owner", owner)
		}
		time.Sleep(ttl)
		next, err := c.TryLock(context.Background(), "k")
		if err != nil {
			t.Fatalf("another owner after the lease: %v", err)
		}
		if err := next.Unlock(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

func TestProgressTimeoutOptionChecked(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, fake, _ := bubbleClient(t)
		for _, d := range []time.Duration{0, -time.Second} {
			if _, err := c.TryLock(context.Background(), "k", client.WithProgressTimeout(d)); !errors.Is(err, api.ErrBadRequest) {
				t.Errorf("WithProgressTimeout(%v): %v", d, err)
			}
		}
		if n := fake.Calls("TryAcquire"); n != 0 {
			t.Fatalf("%d bad requests reached the server", n)
		}
		// Without the option, Progress is harmless and nothing times out.
		l, err := c.TryLock(context.Background(), "k", client.WithTTL(300*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		l.Progress()
		time.Sleep(3 * time.Second)
		if l.State() != client.Held {
			t.Fatalf("state %v without a progress timeout", l.State())
		}
		if err := l.Unlock(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}
