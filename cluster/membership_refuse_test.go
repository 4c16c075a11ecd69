package cluster

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/fsm"
	"github.com/locknode/locknode/transport"
)

// httpPort is the host:port of an HTTP server that lives for the test.
func httpPort(t *testing.T) string {
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

func memberOf(t *testing.T, n *Node, id string) (api.Member, bool) {
	t.Helper()
	st, err := n.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range st.Members {
		if m.ID == id {
			return m, true
		}
	}
	return api.Member{}, false
}

// Membership changes that would hurt are refused, through the leader and
// through a follower, and change nothing: removing an id that is no
// member, adding a voter whose address does not answer as a peer (dead,
// or another service's port). Force adds it anyway (on the leader only),
// and the leader's status then marks it unreachable while the others
// show a recent contact.
func TestMembershipRefusesMistakes(t *testing.T) {
	tc := newTestCluster(t, 3, nil)
	ctx := ctxT(t, time.Minute)
	leader, follower := tc.leader(10*time.Second), tc.follower()
	for _, via := range []*Node{leader, follower} {
		err := via.RemoveServer(ctx, "nosuch")
		if !errors.Is(err, ErrUnknownMember) || !errors.Is(err, api.ErrNotFound) {
			t.Errorf("remove nosuch via %s: %v, want ErrUnknownMember (api.ErrNotFound)", via.ID(), err)
		}
		start := time.Now()
		err = via.AddVoter(ctx, "n5", "127.0.0.1:1")
		if !errors.Is(err, ErrPeerUnreachable) || !errors.Is(err, api.ErrBadRequest) {
			t.Errorf("add unreachable via %s: %v, want ErrPeerUnreachable (api.ErrBadRequest)", via.ID(), err)
		}
		if took := time.Since(start); took > joinProbeTimeout+time.Second {
			t.Errorf("add unreachable via %s took %v", via.ID(), took)
		}
		if len(members(t, leader)) != 3 {
			t.Fatalf("members changed: %v", members(t, leader))
		}
	}
	err := leader.AddVoter(ctx, "n5", httpPort(t))
	if !errors.Is(err, ErrPeerUnreachable) || !errors.Is(err, transport.ErrNotPeer) || !strings.Contains(err.Error(), "that is an HTTP port") {
		t.Errorf("add an HTTP port: %v", err)
	}
	if err := follower.AddVoterForce(ctx, "n5", "127.0.0.1:1"); !errors.Is(err, api.ErrNoLeader) {
		t.Errorf("forced add via a follower: %v, want api.ErrNoLeader (the client tries the next node)", err)
	}
	// Adding a present member again is not checked: it answers anyway.
	if err := follower.AddVoter(ctx, follower.ID(), follower.Addr()); err != nil {
		t.Errorf("add a present member: %v", err)
	}

	if err := leader.AddVoterForce(ctx, "n5", "127.0.0.1:1"); err != nil {
		t.Fatalf("forced add: %v", err)
	}
	tc.eventually(10*time.Second, "n5 marked unreachable, the others in contact", func() bool {
		m, ok := memberOf(t, leader, "n5")
		if !ok || !m.Unreachable {
			return false
		}
		for _, n := range tc.nodes {
			if n == leader {
				continue
			}
			m, _ := memberOf(t, leader, n.ID())
			if m.Unreachable || m.LastContactMs == nil || *m.LastContactMs > leader.unreachableAfter().Milliseconds() {
				return false
			}
		}
		return true
	})
	if m, _ := memberOf(t, follower, "n5"); m.Unreachable || m.LastContactMs != nil {
		t.Errorf("a follower's status claims to know contacts: %+v", m)
	}
	if m, _ := memberOf(t, leader, leader.ID()); m.Unreachable || m.LastContactMs != nil {
		t.Errorf("the leader's own entry: %+v", m)
	}
	if err := follower.RemoveServer(ctx, "n5"); err != nil {
		t.Fatalf("remove n5: %v", err)
	}
	if _, ok := memberOf(t, leader, "n5"); ok {
		t.Fatal("n5 still a member")
	}
}

// Joining through another service's port fails at once, not at the end
// of the join's deadline.
func TestJoinThroughHTTPPortFailsAtOnce(t *testing.T) {
	cfg := DefaultConfig()
	cfg.ID = "j"
	cfg.DataDir = t.TempDir()
	cfg.Join = []string{httpPort(t)}
	cfg.Logger = testLogger(t, cfg.ID)
	ctx := ctxT(t, time.Minute)
	start := time.Now()
	n, err := Start(ctx, cfg)
	if err == nil {
		n.Kill()
		t.Fatal("joined through an HTTP port")
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("took %v", took)
	}
	if !errors.Is(err, transport.ErrNotPeer) || !strings.Contains(err.Error(), "that is an HTTP port") {
		t.Fatalf("err = %v", err)
	}
}

// A node without raft state that waits to be added refuses requests at
// once (api.ErrNoLeader, ErrNotJoined), even with a long deadline, and
// serves once it is added.
func TestNotJoinedRefusesAtOnce(t *testing.T) {
	tc := newTestCluster(t, 1, nil)
	cfg := DefaultConfig()
	cfg.ID = "w"
	cfg.DataDir = t.TempDir()
	cfg.Logger = testLogger(t, cfg.ID)
	w, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Kill() })
	req := api.AcquireRequest{Key: "k", Owner: "o", TTLMs: 60000}
	for _, d := range []time.Duration{0, 30 * time.Second} {
		ctx := context.Background()
		if d > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, d)
			defer cancel()
		}
		start := time.Now()
		_, err := w.TryAcquire(ctx, req)
		if !errors.Is(err, api.ErrNoLeader) || !errors.Is(err, ErrNotJoined) {
			t.Errorf("deadline %v: %v, want ErrNotJoined (api.ErrNoLeader)", d, err)
		}
		if took := time.Since(start); took > time.Second {
			t.Errorf("deadline %v: refused after %v", d, took)
		}
	}
	if err := w.Read(context.Background(), true, func(*fsm.Table, int64) {}); !errors.Is(err, ErrNotJoined) {
		t.Errorf("stale read: %v", err)
	}
	jctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := w.Join(jctx, []string{"127.0.0.1:1"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Join through a closed port: %v, want retries until the deadline", err)
	}
	ctx := ctxT(t, time.Minute)
	if err := tc.nodes[0].AddVoter(ctx, w.ID(), w.Addr()); err != nil {
		t.Fatalf("add w: %v", err)
	}
	tc.nodes = append(tc.nodes, w)
	tc.eventually(10*time.Second, "w to serve", func() bool {
		_, err := w.TryAcquire(ctx, req)
		return err == nil || errors.Is(err, api.ErrLocked)
	})
}
