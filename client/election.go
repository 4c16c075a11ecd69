package client

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/internal/oteltrace"
	"github.com/locknode/locknode/wire"
)

// elections is the part of a Client that campaigns in, resigns from,
// proclaims in and observes elections: the election calls of
// api.Locker, and Leadership handles (Elect) built on them.
type elections struct {
	*caller
}

// Leadership is a won election, bound to a Session. Done is closed as
// soon as the leadership can no longer be trusted: the session ended,
// Resign was called, or the election was observed held by another
// campaign (or by none). Work done as leader should stop when Done is
// closed and carry Fence to the resources it writes, which refuse a
// stale leader's fence even when Done was not noticed in time.
type Leadership struct {
	c    *elections
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
func (c *elections) Elect(ctx context.Context, election, value string, s *Session) (_ *Leadership, rerr error) {
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

// Campaign implements api.Locker: a long poll until req.Value leads
// req.Election or ctx ends. The campaign's token is chosen here when
// req.Token is empty and sent with every retry, so retrying is harmless
// (campaigning again with the same token while leading answers the same
// leadership) and never makes the caller its own rival.
func (c *elections) Campaign(ctx context.Context, req api.CampaignRequest) (_ api.Leader, rerr error) {
	ctx, sp := startSpan(ctx, "locknode.Campaign", oteltrace.AttrElection.String(req.Election))
	defer func() { sp.end(rerr) }()
	if err := req.Validate(c.cfg.Limits); err != nil {
		return api.Leader{}, err
	}
	if req.Token == "" {
		var b [16]byte
		if _, err := rand.Read(b[:]); err != nil {
			return api.Leader{}, fmt.Errorf("campaign token: %w", err)
		}
		req.Token = hex.EncodeToString(b[:])
	}
	for {
		var ld api.Leader
		// Each request is bounded (like an acquire without wait), so a
		// silently dead connection is noticed.
		_, err := c.do(ctx, call{op: "campaign", method: http.MethodPost,
			path: wire.PathElections + url.PathEscape(req.Election) + "/campaign",
			body: jsonBody(wire.CampaignRequest{Value: req.Value, Session: req.Session, Token: req.Token}),
			wait: api.MaxWait, out: &ld})
		var e *Error
		if errors.As(err, &e) || err == nil || ctx.Err() != nil {
			return ld, err
		}
		// Every endpoint failed at the transport level: keep campaigning
		// until ctx ends, as the caller asked to block.
		c.log.Warn("campaign: no endpoint reachable, retrying", "election", req.Election, "error", err)
	}
}

// Resign implements api.Locker.
func (c *elections) Resign(ctx context.Context, leader api.Leader) (rerr error) {
	ctx, sp := startSpan(ctx, "locknode.Resign", oteltrace.AttrElection.String(leader.Election))
	defer func() { sp.end(rerr) }()
	rreq := api.ResignRequest{Election: leader.Election, Value: leader.Value, Token: leader.Token}
	if err := rreq.Validate(c.cfg.Limits); err != nil {
		return err
	}
	_, err := c.do(ctx, call{op: "resign", method: http.MethodPost,
		path: wire.PathElections + url.PathEscape(leader.Election) + "/resign",
		body: jsonBody(wire.ResignRequest{Value: leader.Value, Token: leader.Token})})
	return err
}

// Proclaim implements api.Locker.
func (c *elections) Proclaim(ctx context.Context, leader api.Leader, value string) (_ api.Leader, rerr error) {
	ctx, sp := startSpan(ctx, "locknode.Proclaim", oteltrace.AttrElection.String(leader.Election))
	defer func() { sp.end(rerr) }()
	preq := api.ProclaimRequest{Election: leader.Election, Value: leader.Value, Token: leader.Token, NewValue: value}
	if err := preq.Validate(c.cfg.Limits); err != nil {
		return api.Leader{}, err
	}
	var ld api.Leader
	_, err := c.do(ctx, call{op: "proclaim", method: http.MethodPost,
		path: wire.PathElections + url.PathEscape(leader.Election) + "/proclaim",
		body: jsonBody(wire.ProclaimRequest{Value: leader.Value, Token: leader.Token, NewValue: value}), out: &ld})
	if err != nil {
		return api.Leader{}, err
	}
	return ld, nil
}

// Observe implements api.Locker over the GET .../observe stream. When a
// stream breaks (its node died) it reconnects to the next endpoint with
// back-off and carries on; a reconnect may repeat the current leader,
// which is dropped if it equals the last one delivered. The channel is
// closed when ctx ends. The first connection's failure is returned.
func (c *elections) Observe(ctx context.Context, election string) (<-chan api.Leader, error) {
	path := wire.PathElections + url.PathEscape(election) + "/observe"
	resp, err := c.openStream(ctx, path)
	if err != nil {
		return nil, err
	}
	out := make(chan api.Leader)
	// Ends when ctx ends (every blocking step selects on it); closes out.
	go func() {
		defer close(out)
		var last api.Leader
		delivered := false
		for round := 1; ; round++ {
			if resp != nil {
				sc := bufio.NewScanner(resp.Body)
				for sc.Scan() {
					var ld api.Leader
					if json.Unmarshal(sc.Bytes(), &ld) != nil {
						continue
					}
					if delivered && ld == last {
						continue
					}
					select {
					case out <- ld:
						last, delivered, round = ld, true, 1
					case <-ctx.Done():
						resp.Body.Close()
						return
					}
				}
				resp.Body.Close()
			}
			if ctx.Err() != nil {
				return
			}
			t := time.NewTimer(c.cfg.Retry.backoff(round))
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return
			}
			resp, _ = c.openStream(ctx, path)
		}
	}()
	return out, nil
}
