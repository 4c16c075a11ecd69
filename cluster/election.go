package cluster

import (
	"context"
	"errors"
	"fmt"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/fsm"
)

// ElectionPrefix is prepended to an election's name to form the key of
// its lock: election E is the exclusive lock "election/E", held by the
// leader's value (as owner token) and bound to the leader's session. The
// lock is visible to every client under that key (Inspect, RESP GET).
const ElectionPrefix = "election/"

func electionKey(election string) (string, error) {
	if election == "" {
		return "", badRequest("election name is required")
	}
	return ElectionPrefix + election, nil
}

// Campaign blocks until value leads election: an acquire of the
// election's lock with owner=value, bound to session, waiting in FIFO
// order behind earlier candidates. Leadership ends with the session or
// Resign. If ctx ends first, the candidate leaves the queue and ctx's
// error is returned.
func (n *Node) Campaign(ctx context.Context, election, value, session string) (api.Leader, error) {
	creq := api.CampaignRequest{Election: election, Value: value, Session: session}
	if err := creq.Validate(n.Limits()); err != nil {
		return api.Leader{}, err
	}
	key, err := electionKey(election)
	if err != nil {
		return api.Leader{}, err
	}
	for {
		l, err := n.Acquire(ctx, api.AcquireRequest{Key: key, Owner: value, Session: session})
		if errors.Is(err, api.ErrWaitTimeout) && ctx.Err() == nil {
			// One wait lasts at most api.MaxWait; campaign on.
			continue
		}
		if err != nil {
			return api.Leader{}, err
		}
		return api.Leader{Election: election, Value: value, Fence: l.Fence}, nil
	}
}

// Resign ends value's leadership of election (a no-op error ErrNotHeld
// if value does not lead it).
func (n *Node) Resign(ctx context.Context, election, value string) error {
	rreq := api.ResignRequest{Election: election, Value: value}
	if err := rreq.Validate(n.Limits()); err != nil {
		return err
	}
	key, err := electionKey(election)
	if err != nil {
		return err
	}
	_, err = n.Release(ctx, api.ReleaseRequest{Key: key, Owner: value})
	return err
}

// Observe sends election's leader now (linearizable) and then on every
// change, as this node applies it (driven by the lock's events, no
// polling). An empty Value means no leader. Intermediate states may be
// skipped if the receiver is slow; the last one is always delivered. The
// channel is closed when ctx ends or the node closes.
func (n *Node) Observe(ctx context.Context, election string) (<-chan api.Leader, error) {
	key, err := electionKey(election)
	if err != nil {
		return nil, err
	}
	dirty := make(chan struct{}, 1)
	cancel := n.Subscribe(func(_ uint64, events []fsm.Event) {
		for _, e := range events {
			if e.Key == key || (e.Kind == fsm.EvGranted && containsKey(e.Keys, key)) {
				select {
				case dirty <- struct{}{}:
				default:
				}
				return
			}
		}
	})
	first, err := n.electionLeader(ctx, election, key, false)
	if err != nil {
		cancel()
		return nil, err
	}
	out := make(chan api.Leader, 1)
	out <- first
	// Ends when ctx ends or the node closes.
	go func() {
		defer close(out)
		defer cancel()
		last := first
		for {
			select {
			case <-dirty:
			case <-ctx.Done():
				return
			case <-n.closed:
				return
			}
			// Local state already includes the entry that signalled.
			cur, err := n.electionLeader(ctx, election, key, true)
			if err != nil || cur == last {
				continue
			}
			select {
			case out <- cur:
				last = cur
			case <-ctx.Done():
				return
			case <-n.closed:
				return
			}
		}
	}()
	return out, nil
}

func containsKey(keys []string, k string) bool {
	for _, x := range keys {
		if x == k {
			return true
		}
	}
	return false
}

func (n *Node) electionLeader(ctx context.Context, election, key string, stale bool) (api.Leader, error) {
	ld := api.Leader{Election: election}
	err := n.Read(ctx, stale, func(t *fsm.Table, now int64) {
		if h, ok := t.Inspect(key, now); ok == nil && h.Kind == fsm.KindLock && len(h.Holders) > 0 {
			ld.Value, ld.Fence = h.Holders[0].Owner, h.Holders[0].Fence
		}
	})
	if err != nil {
		return api.Leader{}, fmt.Errorf("observe %q: %w", election, err)
	}
	return ld, nil
}
