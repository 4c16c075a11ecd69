package client_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/auth"
	"github.com/locknode/locknode/client"
	"github.com/locknode/locknode/httpapi"
	"github.com/locknode/locknode/httpapi/httpapitest"
)

// TestUsernamePassword: Config.Username/Password authenticate; without
// them, or outside the user's rights, the typed errors say so and are
// not retried.
func TestUsernamePassword(t *testing.T) {
	us, err := auth.Parse(strings.NewReader("user w on >wp ~app:* +@read +@write\n"))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(httpapi.New(httpapitest.NewFake(), httpapi.Config{Users: auth.NewStoreFrom(us, nil)}))
	t.Cleanup(srv.Close)
	ctx := context.Background()
	req := api.AcquireRequest{Key: "app:k", Owner: "o", TTLMs: 60000}

	c, err := client.New(client.Config{Endpoints: []string{srv.URL}, Username: "w", Password: "wp"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.TryAcquire(ctx, req); err != nil {
		t.Fatalf("with credentials: %v", err)
	}
	if _, err := c.Inspect(ctx, "app:k", api.ReadOptions{}); err != nil {
		t.Fatalf("inspect: %v", err)
	}
	if _, err := c.TryAcquire(ctx, api.AcquireRequest{Key: "other", Owner: "o", TTLMs: 1000}); !errors.Is(err, api.ErrForbidden) {
		t.Fatalf("outside the namespace: %v", err)
	}
	if _, err := c.Release(ctx, api.ReleaseRequest{Key: "app:k", Force: true}); !errors.Is(err, api.ErrForbidden) {
		t.Fatalf("forced release without admin: %v", err)
	}
	for _, cfg := range []client.Config{
		{Endpoints: []string{srv.URL}},
		{Endpoints: []string{srv.URL}, Username: "w", Password: "wrong"},
	} {
		c, err := client.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.TryAcquire(ctx, req); !errors.Is(err, api.ErrUnauthorized) {
			t.Fatalf("user %q: %v", cfg.Username, err)
		}
	}
}
