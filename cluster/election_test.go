package cluster

import (
	"testing"
	"time"

	"github.com/locknode/locknode/api"
)

func TestElection(t *testing.T) {
	tc := newTestCluster(t, 3, nil)
	ctx := ctxT(t, 30*time.Second)
	a, b, c := tc.nodes[0], tc.nodes[1], tc.nodes[2]
	sa, err := a.OpenSession(ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	sb, err := b.OpenSession(ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	obs, err := c.Observe(ctx, "e")
	if err != nil {
		t.Fatal(err)
	}
	next := func() api.Leader {
		t.Helper()
		select {
		case l, ok := <-obs:
			if !ok {
				t.Fatal("observe channel closed")
			}
			return l
		case <-ctx.Done():
			t.Fatal("no observation")
		}
		return api.Leader{}
	}
	if l := next(); l.Value != "" {
		t.Fatalf("initial leader %+v, want none", l)
	}
	la, err := a.Campaign(ctx, api.CampaignRequest{Election: "e", Value: "alpha", Session: sa.ID})
	if err != nil {
		t.Fatal(err)
	}
	if l := next(); l.Value != "alpha" || l.Fence != la.Fence {
		t.Fatalf("observed %+v, want alpha/%d", l, la.Fence)
	}
	won := make(chan api.Leader, 1)
	go func() { // ends when b wins (after alpha resigns) or ctx ends
		l, err := b.Campaign(ctx, api.CampaignRequest{Election: "e", Value: "beta", Session: sb.ID})
		if err != nil {
			t.Error(err)
		}
		won <- l
	}()
	if _, err := b.Campaign(ctx, api.CampaignRequest{Value: "x", Session: sb.ID}); err == nil {
		t.Fatal("campaign without a name accepted")
	}
	if err := a.Resign(ctx, la); err != nil {
		t.Fatal(err)
	}
	lb := <-won
	if lb.Value != "beta" || lb.Fence <= la.Fence {
		t.Fatalf("beta won %+v", lb)
	}
	// Observations may skip the empty state in between, never beta.
	for {
		l := next()
		if l.Value == "beta" {
			break
		}
		if l.Value != "" {
			t.Fatalf("unexpected observation %+v", l)
		}
	}
	// Leadership ends with the session.
	if err := b.CloseSession(ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	if l := next(); l.Value != "" {
		t.Fatalf("after session close: %+v", l)
	}
}
