package client_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/client"
	"github.com/locknode/locknode/httpapi/httpapitest"
)

// The handler behind Middleware sees its Lock (fence, owner) through the
// request context; WithRetry lets a briefly held key be retried instead
// of answering 423 at once.
func TestMiddlewareLockInContextAndRetry(t *testing.T) {
	fake := httpapitest.NewFake()
	c := newClient(t, httpapitest.NewServer(t, fake).URL)
	type seen struct {
		owner string
		fence uint64
		ok    bool
	}
	got := make(chan seen, 1)
	app := httptest.NewServer(client.Middleware(c, func(*http.Request) string { return "job" },
		client.WithRetry(200, 5*time.Millisecond, time.Millisecond))(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l := client.LockFromContext(r.Context())
		if l == nil {
			got <- seen{}
			return
		}
		owner, fence, held := fake.Holder("job")
		got <- seen{owner, fence, held && owner == l.Owner() && fence == l.Fence()}
	})))
	defer app.Close()

	// Held for a short lease: the request retries until it expires.
	if _, err := fake.TryAcquire(context.Background(), api.AcquireRequest{Key: "job", Owner: "other", TTLMs: 50}); err != nil {
		t.Fatal(err)
	}
	resp, err := app.Client().Get(app.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if s := <-got; !s.ok {
		t.Fatalf("handler saw %+v: not the lock the server holds", s)
	}
	if n := fake.Calls("TryAcquire"); n < 3 {
		t.Fatalf("%d attempts: the held key was not retried", n)
	}
	if client.LockFromContext(context.Background()) != nil {
		t.Fatal("a Lock from a bare context")
	}
}
