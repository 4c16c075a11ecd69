package client_test

import (
	"context"
	"testing"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/httpapi/httpapitest"
)

// TestInspectKeysWithSlashes: the client escapes every key so the server
// reads back exactly that key, whatever slashes, dots, percent signs or
// route-like segments it holds.
func TestInspectKeysWithSlashes(t *testing.T) {
	fake := httpapitest.NewFake()
	c := newClient(t, httpapitest.NewServer(t, fake).URL)
	ctx := context.Background()
	keys := []string{"a/b", "a/b/history", "history", "x%2Fy", "ключ/é", "a//b", "../x", ".", "..", "a/./b", "a/", "/a", "try", "a?b#c", "a b+c"}
	for i, k := range keys {
		lease, err := c.TryAcquire(ctx, api.AcquireRequest{Key: k, Owner: "o", TTLMs: 60000})
		if err != nil {
			t.Fatalf("acquire %q: %v", k, err)
		}
		li, err := c.Inspect(ctx, k, api.ReadOptions{})
		if err != nil {
			t.Fatalf("inspect %q: %v", k, err)
		}
		if li.Key != k || len(li.Holders) != 1 || li.Holders[0].Fence != lease.Fence {
			t.Errorf("%d: inspect %q answered %q holders %+v", i, k, li.Key, li.Holders)
		}
	}
}
