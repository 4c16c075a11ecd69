package cluster

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/locknode/locknode/api"
)

// TransferLeadership: a follower refuses naming the leader; the leader
// refuses an unknown id, a non-voter and itself, hands over to a chosen
// voter and to raft's pick, and reports a transfer to a dead voter as
// timed out.
func TestTransferLeadership(t *testing.T) {
	tc := newTestCluster(t, 3, nil)
	ctx := ctxT(t, time.Minute)
	l, f := tc.leader(10*time.Second), tc.follower()

	if _, err := f.TransferLeadership(ctx, ""); !errors.Is(err, api.ErrNoLeader) || !strings.Contains(err.Error(), "taken by the leader only: "+l.ID()) {
		t.Fatalf("at a follower: %v", err)
	}
	if err := l.raft.AddNonvoter("nv", "127.0.0.1:1", 0, 0).Error(); err != nil {
		t.Fatal(err)
	}
	for _, tcase := range []struct {
		id   string
		want []error
	}{
		{"nosuch", []error{ErrUnknownMember, api.ErrNotFound}},
		{"nv", []error{ErrNotVoter, api.ErrBadRequest}},
		{l.ID(), []error{api.ErrBadRequest}},
	} {
		_, err := l.TransferLeadership(ctx, tcase.id)
		for _, w := range tcase.want {
			if !errors.Is(err, w) {
				t.Fatalf("transfer to %s: %v, want %v", tcase.id, err, w)
			}
		}
	}
	if !l.IsLeader() {
		t.Fatal("a refused transfer moved leadership")
	}

	res, err := l.TransferLeadership(ctx, f.ID())
	if err != nil || res.Previous != l.ID() || res.Leader != f.ID() {
		t.Fatalf("transfer to %s: %+v %v", f.ID(), res, err)
	}
	if now := tc.leader(10 * time.Second); now != f {
		t.Fatalf("leader %s after the transfer to %s", now.ID(), f.ID())
	}

	l = f
	res, err = l.TransferLeadership(ctx, "")
	if err != nil || res.Previous != l.ID() || res.Leader == "" || res.Leader == l.ID() {
		t.Fatalf("transfer to raft's pick: %+v %v", res, err)
	}
	l = tc.leader(10 * time.Second)
	if l.ID() != res.Leader {
		t.Fatalf("leader %s, the transfer said %s", l.ID(), res.Leader)
	}

	var dead *Node
	for _, n := range tc.nodes {
		if n != l {
			dead = n
			break
		}
	}
	deadID := dead.ID()
	tc.kill(tc.index(dead))
	if _, err := l.TransferLeadership(ctx, deadID); !errors.Is(err, ErrTransferTimeout) || !errors.Is(err, api.ErrWaitTimeout) {
		t.Fatalf("transfer to the dead %s: %v", deadID, err)
	}
	if now := tc.leader(10 * time.Second); now != l {
		t.Fatalf("leader %s after a failed transfer, was %s", now.ID(), l.ID())
	}
}
