package client_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/locknode/locknode/httpapi/httpapitest"
	"github.com/locknode/locknode/locktest"
)

// TestLimits: the shared limits cases (locktest.RequestCases) through the
// Go client: each is refused with the case's error and message before
// anything is sent (the server never sees it).
func TestLimits(t *testing.T) {
	ctx := context.Background()
	fake := httpapitest.NewFake()
	c := newClient(t, httpapitest.NewServer(t, fake).URL)
	for _, tc := range locktest.RequestCases("lim", "o") {
		t.Run(tc.Name, func(t *testing.T) {
			var err error
			switch {
			case tc.Acquire != nil && tc.Wait:
				_, err = c.Acquire(ctx, *tc.Acquire)
			case tc.Acquire != nil:
				_, err = c.TryAcquire(ctx, *tc.Acquire)
			case tc.Extend != nil:
				_, err = c.Extend(ctx, *tc.Extend)
			case tc.Release != nil:
				_, err = c.Release(ctx, *tc.Release)
			case tc.Session != nil:
				_, err = c.OpenSession(ctx, time.Duration(tc.Session.TTLMs)*time.Millisecond)
			}
			if !errors.Is(err, tc.Want) || !strings.Contains(err.Error(), tc.Mention) {
				t.Fatalf("err = %v, want %v saying %q", err, tc.Want, tc.Mention)
			}
		})
	}
	for _, m := range []string{"Acquire", "TryAcquire", "Release", "Extend", "OpenSession"} {
		if n := fake.Calls(m); n != 0 {
			t.Errorf("the server's %s was called %d times", m, n)
		}
	}
}
