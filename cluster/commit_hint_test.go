package cluster

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/locknode/locknode/fsm"
	"github.com/locknode/locknode/transport"
)

// readGate holds back reads on raft connections dialled to one address:
// a leader then cannot read that follower's AppendEntries answers, so its
// replicator for the follower cannot send the follower a new commit index
// (neither the commit push nor the CommitTimeout resend), while the
// follower still receives and stores entries.
type readGate struct {
	mu      sync.Mutex
	addr    string
	release chan struct{} // non-nil while reads to addr are held
}

func (g *readGate) hold(addr string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.addr, g.release = addr, make(chan struct{})
}

// open lets held reads go on; safe to call more than once.
func (g *readGate) open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.release != nil {
		close(g.release)
		g.release = nil
	}
}

func (g *readGate) wait(addr string) {
	g.mu.Lock()
	ch := g.release
	if g.addr != addr {
		ch = nil
	}
	g.mu.Unlock()
	if ch != nil {
		<-ch
	}
}

// gatedTransport is a node's Transport whose raft stream goes through a
// readGate and whose batch calls can play a leader that predates
// rpcApplyBatchHinted.
type gatedTransport struct {
	Transport
	gate    *readGate
	oldKind bool // answer rpcApplyBatchHinted as an unknown kind
}

func (g *gatedTransport) RaftStreamLayer() raft.StreamLayer {
	return gatedStream{StreamLayer: g.Transport.RaftStreamLayer(), gate: g.gate}
}

func (g *gatedTransport) Call(ctx context.Context, addr string, req []byte) ([]byte, error) {
	if g.oldKind && len(req) > 0 && req[0] == rpcApplyBatchHinted {
		return nil, fmt.Errorf("%w: cluster: malformed rpc: unknown kind %d", transport.ErrRemote, req[0])
	}
	return g.Transport.Call(ctx, addr, req)
}

type gatedStream struct {
	raft.StreamLayer
	gate *readGate
}

func (s gatedStream) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	c, err := s.StreamLayer.Dial(addr, timeout)
	if err != nil {
		return nil, err
	}
	return &gatedConn{Conn: c, addr: string(addr), gate: s.gate}, nil
}

type gatedConn struct {
	net.Conn
	addr string
	gate *readGate
}

func (c *gatedConn) Read(p []byte) (int, error) {
	c.gate.wait(c.addr)
	return c.Conn.Read(p)
}

// TestForwardCommitHint: a follower applies the entry of a command it
// forwarded from the leader's answer (the commit hint), while the leader
// cannot tell it of the commit by AppendEntries (its answers to the
// leader held back, CommitTimeout an hour). Without the hint (a leader
// that predates rpcApplyBatchHinted: the follower falls back to
// rpcApplyBatch) the same follower has not applied it when its Apply
// gives up waiting, and applies it once the leader hears from it again.
func TestForwardCommitHint(t *testing.T) {
	for _, tt := range []struct {
		name    string
		oldKind bool
	}{
		{name: "hint"},
		{name: "old leader", oldKind: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			gate := &readGate{}
			gts := map[string]*gatedTransport{}
			tc := newTestCluster(t, 3, func(cfg *Config) {
				gt := &gatedTransport{Transport: cfg.Transport, gate: gate}
				gts[cfg.ID] = gt
				cfg.Transport = gt
				cfg.CommitTimeout = time.Hour
				// How long Apply waits for the follower's own apply; the
				// test waits on the apply itself, and a hold stays well
				// under a heartbeat timeout.
				cfg.RetryTimeout = 500 * time.Millisecond
			})
			// Cleanups run last first: this one before the cluster's,
			// whose Kill would wait for held reads.
			t.Cleanup(gate.open)
			leader := tc.leader(20 * time.Second)
			f := tc.follower()
			gts[f.ID()].oldKind = tt.oldKind
			// The follower hears no heartbeat while held: it must not
			// start an election however long the test runs.
			rc := f.raft.ReloadableConfig()
			rc.HeartbeatTimeout, rc.ElectionTimeout = time.Hour, time.Hour
			if err := f.raft.ReloadConfig(rc); err != nil {
				t.Fatal(err)
			}
			ctx := ctxT(t, 20*time.Second)
			warm, err := f.Apply(ctx, incr("warm"))
			if err != nil {
				t.Fatal(err)
			}
			tc.eventually(10*time.Second, "the follower to apply its warm-up entry", func() bool {
				return f.AppliedIndex() >= warm.Index
			})

			addr := tc.cfgs[tc.index(f)].BindAddr
			var (
				res fsm.Result
				key string
			)
			for attempt := 1; ; attempt++ {
				gate.hold(addr)
				key = fmt.Sprintf("hinted-%d", attempt)
				var err error
				if res, err = f.Apply(ctx, incr(key)); err != nil {
					t.Fatal(err)
				}
				if _, id := f.raft.LeaderWithID(); string(id) != leader.ID() {
					t.Fatalf("leader changed to %q during the test", id)
				}
				// The hold may catch the leader's replicator reading an
				// answer sent before it: then the entry does not reach the
				// follower until the hold ends (nothing for a hint to
				// commit), or, if that read was already under way, reaches
				// it after the commit, with the commit index. Either way
				// the attempt shows nothing; make another.
				valid := f.raft.LastIndex() >= res.Index
				if tt.oldKind {
					valid = f.AppliedIndex() < res.Index
				}
				if valid {
					break
				}
				if attempt == 5 {
					t.Fatalf("in %d attempts, never an entry that reached the follower before its commit index did", attempt)
				}
				gate.open()
				tc.eventually(10*time.Second, "the follower to apply everything", func() bool {
					return f.AppliedIndex() >= res.Index
				})
			}
			if !tt.oldKind {
				// Still held: only the hint can commit it.
				tc.eventually(10*time.Second, "the follower to apply its entry from the hint", func() bool {
					return f.AppliedIndex() >= res.Index
				})
			}
			gate.open()
			tc.eventually(10*time.Second, "the follower to apply the entry", func() bool {
				return f.AppliedIndex() >= res.Index
			})
			var got string
			if err := f.Read(ctx, true, func(tb *fsm.Table, now int64) {
				r, _ := tb.Read(now, [][]byte{[]byte("GET"), []byte(key)})
				got = r.Str
			}); err != nil {
				t.Fatal(err)
			}
			if got != "1" {
				t.Fatalf("follower reads %q, want 1", got)
			}
		})
	}
}

// TestCommitHintAnswer: the leader's answer to rpcApplyBatchHinted ends
// with the batch's last entry's index and that entry's own term; an
// rpcApplyBatch answer has no hint; a follower refuses a hint that names
// an entry past the batch's.
func TestCommitHintAnswer(t *testing.T) {
	tc := newTestCluster(t, 1, nil)
	l := tc.leader(10 * time.Second)
	ctx := ctxT(t, 10*time.Second)
	batch := func() []*forwardItem {
		var b []*forwardItem
		for range 3 {
			it := &forwardItem{cmd: incr("a")}
			it.req = it.cmd.AppendBinary(nil)
			b = append(b, it)
		}
		return b
	}
	for _, tt := range []struct {
		name string
		kind byte
	}{
		{"hinted", rpcApplyBatchHinted},
		{"plain", rpcApplyBatch},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req := appendForwardBatch(batch())
			req[0] = tt.kind
			resp, err := l.handleRPC(ctx, req)
			if err != nil || len(resp) == 0 || resp[0] != stOK {
				t.Fatalf("answer %q, %v", resp, err)
			}
			d := fsm.NewDecoder(resp[1:])
			if cnt := d.Uvarint(); cnt != 3 {
				t.Fatalf("%d results", cnt)
			}
			var last uint64
			for range 3 {
				if st := d.Byte(); st != stOK {
					t.Fatalf("status %d", st)
				}
				r, err := decodeResult(d.Bytes())
				if err != nil {
					t.Fatal(err)
				}
				last = max(last, r.Index)
			}
			if tt.kind == rpcApplyBatch {
				if d.Err() != nil || d.Len() != 0 {
					t.Fatalf("plain answer: %v, %d bytes after the results", d.Err(), d.Len())
				}
				return
			}
			idx, term := d.Uvarint(), d.Uvarint()
			if d.Err() != nil || d.Len() != 0 {
				t.Fatalf("hint: %v, %d bytes more", d.Err(), d.Len())
			}
			var e raft.Log
			if err := l.logs.GetLog(last, &e); err != nil || idx != last || term != e.Term || term == 0 {
				t.Fatalf("hint (%d, %d), want the last entry's (%d, %d) (%v)", idx, term, last, e.Term, err)
			}
		})
	}

	// A hint past the batch's own entries is a malformed answer.
	b := batch()[:1]
	resp, err := l.handleRPC(ctx, appendForwardBatch(b))
	if err != nil || len(resp) == 0 || resp[0] != stOK {
		t.Fatalf("answer %q, %v", resp, err)
	}
	d := fsm.NewDecoder(resp[1:])
	d.Uvarint()
	d.Byte()
	r, err := decodeResult(d.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	bad := binary.AppendUvarint(append([]byte(nil), resp[1:]...), r.Index+1)
	bad = binary.AppendUvarint(bad, 1)
	if err := l.completeForwarded(b, bad, 0, true); !errors.Is(err, errBadRPC) {
		t.Fatalf("hint past the batch: %v, want errBadRPC", err)
	}
}
