package cluster

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/locknode/locknode/api"
)

// A node that has lost its quorum refuses requests that need a leader
// within NoLeaderBound, however long the caller would wait, saying there
// is no leader and what a quorum needs; later requests are refused at
// once; when the quorum is back, requests succeed again.
func TestNoQuorumIsAnsweredWithinTheElectionBound(t *testing.T) {
	tc := newTestCluster(t, 3, nil)
	l := tc.leader(10 * time.Second)
	s := tc.follower()
	other := -1
	for i, n := range tc.nodes {
		if n != l && n != s {
			other = i
		}
	}
	lost := time.Now()
	tc.kill(tc.index(l))
	tc.kill(other)
	bound := s.cfg.NoLeaderBound()

	for i, c := range []struct {
		name  string
		limit time.Duration // from the start of the call
	}{
		{"first, while elections fail", bound + 2*time.Second},
		{"later, at once", 500 * time.Millisecond},
	} {
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_, err := s.TryAcquire(ctx, api.AcquireRequest{Key: "k", Owner: "o", TTLMs: 1000})
		cancel()
		took := time.Since(start)
		var nle *NoLeaderError
		if !errors.Is(err, api.ErrNoLeader) || !errors.As(err, &nle) {
			t.Fatalf("%s: err %v, want a NoLeaderError", c.name, err)
		}
		if i == 0 {
			took = time.Since(lost)
		}
		if took > c.limit {
			t.Errorf("%s: answered after %v, want within %v", c.name, took, c.limit)
		}
		if nle.Voters != 3 || nle.For < bound {
			t.Errorf("%s: %+v", c.name, nle)
		}
		for _, w := range []string{"no leader", "no quorum", "2 of the 3 voters"} {
			if !strings.Contains(api.ClientText(err), w) {
				t.Errorf("%s: %q lacks %q", c.name, api.ClientText(err), w)
			}
		}
	}

	tc.restart(other)
	tc.eventually(30*time.Second, "a request to succeed with the quorum back", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_, err := s.TryAcquire(ctx, api.AcquireRequest{Key: "k", Owner: "o", TTLMs: 1000})
		return err == nil
	})
}

// Removing a member that does not exist is refused with the ids that do.
func TestRemoveUnknownMemberListsTheMembers(t *testing.T) {
	tc := newTestCluster(t, 3, nil)
	l := tc.leader(10 * time.Second)
	err := l.RemoveServer(ctxT(t, 10*time.Second), "n9")
	if !errors.Is(err, ErrUnknownMember) || !errors.Is(err, api.ErrNotFound) {
		t.Fatalf("err %v", err)
	}
	if got := api.ClientText(err); !strings.Contains(got, `"n9" is not a member (the members: n1, n2, n3)`) {
		t.Errorf("%q", got)
	}
}
