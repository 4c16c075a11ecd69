package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// ErrNotReady: the node cannot answer linearizably now (Ready).
var ErrNotReady = errors.New("cluster: not ready")

// Defaults of Config.ReadyMaxLagEntries and Config.ReadyMaxLag.
const (
	// DefaultReadyMaxLagEntries is 16 full AppendEntries batches
	// (MaxAppendEntries 256): a follower that keeps up is within a batch
	// or two of the commit index even under load.
	DefaultReadyMaxLagEntries = 4096
	DefaultReadyMaxLag        = time.Second
)

// Ready reports whether this node can serve requests now, and if not,
// why (an error wrapping ErrNotReady). It is what a load balancer's
// readiness probe asks (GET /readyz). The node is ready when, in this
// order:
//
//  1. it knows a leader;
//  2. a follower heard from it within 3 heartbeat timeouts;
//  3. its log store's last append succeeded, and none failed within
//     ReadyMaxLag (a node that cannot write or fsync its log cannot
//     acknowledge anything; storeHealth says how a failure clears);
//  4. it reaches the leader and learns its commit index (a read index:
//     a follower's own commit index says nothing while it is missing
//     the entries, as after a restart or a partition);
//  5. it is at most ReadyMaxLagEntries behind that index;
//  6. it applies up to that index within ReadyMaxLag.
//
// Steps 4 and 6 share ReadyMaxLag, so Ready answers within about that
// long. Concurrent calls share one evaluation, and calls within
// readyReuse after it ended get its answer (readyShare says why); a
// call whose ctx ends before the shared answer comes returns ctx's
// error, wrapped in ErrNotReady.
func (n *Node) Ready(ctx context.Context) error {
	c, run := n.readyShare.join(time.Now())
	if run {
		// Not ctx: the callers that joined must not fail because the
		// first one left. ReadyMaxLag bounds it.
		err := n.ready(context.Background())
		c.finish(err, time.Now())
		return err
	}
	select {
	case <-c.done:
		return c.err
	case <-ctx.Done():
		return fmt.Errorf("%w: %w", ErrNotReady, ctx.Err())
	}
}

// readyReuse is how long a finished Ready evaluation answers later calls.
const readyReuse = 100 * time.Millisecond

// readyShare lets Ready calls share evaluations: GET /readyz needs no
// credentials, and on a follower each evaluation asks the leader for a
// read index (a round of heartbeats to a quorum), so a flood of probes
// must not become a flood of those. The zero value is ready to use.
type readyShare struct {
	mu  sync.Mutex
	cur *readyCall // running, or the last one finished
}

type readyCall struct {
	done chan struct{} // closed when err and end are set
	err  error
	end  time.Time
}

// join returns the evaluation to wait for, or a new one the caller
// must run (run) and finish.
func (s *readyShare) join(now time.Time) (c *readyCall, run bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.cur; c != nil {
		select {
		case <-c.done:
			if now.Sub(c.end) < readyReuse {
				return c, false
			}
		default:
			return c, false
		}
	}
	c = &readyCall{done: make(chan struct{})}
	s.cur = c
	return c, true
}

func (c *readyCall) finish(err error, end time.Time) {
	c.err, c.end = err, end
	close(c.done)
}

// ready is one evaluation of Ready's conditions.
func (n *Node) ready(ctx context.Context) error {
	if err := n.Halted(); err != nil {
		return fmt.Errorf("%w: %w", ErrNotReady, err)
	}
	_, leader := n.raft.LeaderWithID()
	if leader == "" {
		return fmt.Errorf("%w: no leader known", ErrNotReady)
	}
	if n.raft.State() != raft.Leader {
		limit := 3 * n.cfg.HeartbeatTimeout
		if lc := n.raft.LastContact(); lc.IsZero() || time.Since(lc) > limit {
			return fmt.Errorf("%w: no contact with leader %s for over %v", ErrNotReady, leader, limit)
		}
	}
	if err := n.storeReady(time.Now()); err != nil {
		return err
	}

	bound := n.cfg.ReadyMaxLag
	wctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	idx, _, _, err := n.readIndex(wctx)
	if err != nil {
		return fmt.Errorf("%w: cannot learn the commit index from leader %s: %w", ErrNotReady, leader, err)
	}
	applied := n.AppliedIndex()
	if idx > applied && idx-applied > n.cfg.ReadyMaxLagEntries {
		return fmt.Errorf("%w: %d entries behind the leader's commit index %d (applied %d; at most %d)",
			ErrNotReady, idx-applied, idx, applied, n.cfg.ReadyMaxLagEntries)
	}
	if err := n.waitApplied(wctx, idx); err != nil {
		return fmt.Errorf("%w: applied %d of the leader's commit index %d, not all within %v: %w",
			ErrNotReady, n.AppliedIndex(), idx, bound, err)
	}
	return nil
}

// storeReady is Ready's log store condition at now.
func (n *Node) storeReady(now time.Time) error {
	at, failing, err := n.storeHealth.last()
	switch {
	case err == nil:
		return nil
	case failing:
		return fmt.Errorf("%w: log store: write failed %v ago, none succeeded since: %w",
			ErrNotReady, now.Sub(at).Round(time.Millisecond), err)
	case now.Sub(at) < n.cfg.ReadyMaxLag:
		return fmt.Errorf("%w: log store: write failed %v ago: %w",
			ErrNotReady, now.Sub(at).Round(time.Millisecond), err)
	}
	return nil
}
