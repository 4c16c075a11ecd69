package client

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/internal/oteltrace"
)

// Leadership is a won election, bound to a Session. Done is closed as
// soon as the leadership can no longer be trusted: the session ended,
// Resign was called, or the election was observed held by another
// campaign (or by none). Work done as leader should stop when Done is
// closed and carry Fence to the resources it writes, which refuse a
// stale leader's fence even when Done was not noticed in time.
type Leadership struct {
	c    *Client
	sess *Session
	stop context.CancelFunc // ends the watch

	pmu    sync.Mutex // one Proclaim at a time, so each starts from the current value
	mu     sync.Mutex
	leader api.Leader
	err    error
	done   chan struct{}
}

// Elect campaigns for election with value, bound to s, and blocks until it
// leads (or ctx ends). The returned Leadership watches the election until
// it is lost or resigned; its watch holds one Observe stream open.
func (c *Client) Elect(ctx context.Context, election, value string, s *Session) (_ *Leadership, rerr error) {
	ctx, sp := startSpan(ctx, "locknode.Elect", oteltrace.AttrElection.String(election))
	defer func() { sp.end(rerr) }()
	ld, err := c.Campaign(ctx, api.CampaignRequest{Election: election, Value: value, Session: s.ID()})
	if err != nil {
		return nil, err
	}
	// The watch outlives ctx (which bounded the campaign only).
	wctx, stop := context.WithCancel(context.Background())
	obs, err := c.Observe(wctx, election)
	if err != nil {
		stop()
		rctx, cancel := context.WithTimeout(context.Background(), c.cfg.RequestTimeout)
		defer cancel()
		if rerr := c.Resign(rctx, ld); rerr != nil {
			c.log.Warn("elect: resign after a failed observe", "election", election, "error", rerr)
		}
		return nil, fmt.Errorf("elect %q: observe: %w", election, err)
	}
	l := &Leadership{c: c, sess: s, stop: stop, leader: ld, done: make(chan struct{})}
	// Ends when the leadership is lost or resigned (l.stop cancels wctx,
	// which closes obs).
	go l.watch(wctx, obs)
	return l, nil
}

func (l *Leadership) watch(ctx context.Context, obs <-chan api.Leader) {
	for {
		select {
		case <-l.sess.Done():
			l.lose(fmt.Errorf("%w: %w", ErrLeadershipLost, l.sess.Err()))
			return
		case cur, ok := <-obs:
			if !ok {
				l.lose(fmt.Errorf("%w: %w", ErrLeadershipLost, context.Cause(ctx)))
				return
			}
			// Proclaim keeps the fence, and every new grant has a higher
			// one: another fence means another leader, or none.
			if cur.Fence != l.Leader().Fence {
				l.lose(fmt.Errorf("%w: %q led by %q at fence %d", ErrLeadershipLost, cur.Election, cur.Value, cur.Fence))
				return
			}
		}
	}
}

// lose ends the leadership with err (the first cause wins).
func (l *Leadership) lose(err error) {
	l.mu.Lock()
	if l.err == nil {
		l.err = err
		close(l.done)
	}
	l.mu.Unlock()
	l.stop()
}

// Done returns a channel closed when the leadership is over.
func (l *Leadership) Done() <-chan struct{} { return l.done }

// Err says why the leadership is over (nil while it is not): it wraps
// ErrLeadershipLost or ErrResigned.
func (l *Leadership) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// Leader returns the leadership as the campaign won it (with the value
// last proclaimed). It carries the campaign's token: keep it private.
func (l *Leadership) Leader() api.Leader {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.leader
}

// Fence returns the leadership's fencing token.
func (l *Leadership) Fence() uint64 { return l.Leader().Fence }

// Proclaim publishes value as the leader's value, keeping leadership and
// fence.
func (l *Leadership) Proclaim(ctx context.Context, value string) error {
	select {
	case <-l.done:
		return l.Err()
	default:
	}
	l.pmu.Lock()
	defer l.pmu.Unlock()
	ld, err := l.c.Proclaim(ctx, l.Leader(), value)
	if err != nil {
		return err
	}
	l.mu.Lock()
	l.leader = ld
	l.mu.Unlock()
	return nil
}

// Resign ends the leadership: Done is closed (Err is ErrResigned) before
// the election is released, so the caller stops acting as leader first.
// If the release fails, the error is returned and the election is freed
// when the session ends. A leadership already lost returns its Err.
func (l *Leadership) Resign(ctx context.Context) error {
	select {
	case <-l.done:
		if errors.Is(l.Err(), ErrResigned) {
			return nil
		}
		return l.Err()
	default:
	}
	l.lose(ErrResigned)
	l.pmu.Lock() // a Proclaim under way decides which value to resign
	defer l.pmu.Unlock()
	err := l.c.Resign(ctx, l.Leader())
	if errors.Is(err, api.ErrNotHeld) || errors.Is(err, api.ErrNotOwner) {
		return fmt.Errorf("%w: %w", ErrLeadershipLost, err)
	}
	return err
}
