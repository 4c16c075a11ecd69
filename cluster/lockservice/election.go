package lockservice

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/fsm"
)

// ElectionPrefix is prepended to an election's name to form the key of
// its lock: election E is the exclusive lock "election/E", bound to the
// leader's session. Its owner token is the leader's value, a NUL byte and
// a digest of the campaign's secret token (ElectionOwner), so each
// campaign is a distinct holder even when values repeat, and what readers
// of the lock see (Inspect, RESP GET) does not let them resign or
// proclaim through the election API. The lock is visible to every client
// under that key.
const ElectionPrefix = api.ElectionPrefix

func electionKey(election string) (string, error) {
	if election == "" {
		return "", badRequest("election name is required")
	}
	return ElectionPrefix + election, nil
}

// ElectionOwner is the election lock's owner token for a campaign with
// value and secret token.
func ElectionOwner(value, token string) string {
	sum := sha256.Sum256([]byte(token))
	return value + "\x00" + hex.EncodeToString(sum[:16])
}

// ElectionValue is the public value of an election lock's owner token:
// the part before the NUL byte (the whole token for a lock taken through
// the lock API).
func ElectionValue(owner string) string {
	if i := strings.IndexByte(owner, 0); i >= 0 {
		return owner[:i]
	}
	return owner
}

// NewElectionToken returns a fresh campaign token: 128 random bits in hex.
func NewElectionToken() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("campaign token: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// Campaign blocks until req.Value leads req.Election: an acquire of the
// election's lock bound to req.Session, waiting in FIFO order behind
// earlier candidates (a campaign with the same value but another token is
// another candidate). Leadership ends with the session or Resign. If ctx
// ends first, the candidate leaves the queue and ctx's error is returned.
func (s *Service) Campaign(ctx context.Context, req api.CampaignRequest) (api.Leader, error) {
	if err := req.Validate(s.Limits()); err != nil {
		return api.Leader{}, err
	}
	key, err := electionKey(req.Election)
	if err != nil {
		return api.Leader{}, err
	}
	if req.Token == "" {
		if req.Token, err = NewElectionToken(); err != nil {
			return api.Leader{}, err
		}
	}
	owner := ElectionOwner(req.Value, req.Token)
	for {
		l, err := s.Acquire(ctx, api.AcquireRequest{Key: key, Owner: owner, Session: req.Session})
		if errors.Is(err, api.ErrWaitTimeout) && ctx.Err() == nil {
			// One wait lasts at most api.MaxWait; campaign on.
			continue
		}
		if err != nil {
			return api.Leader{}, err
		}
		return api.Leader{Election: req.Election, Value: req.Value, Fence: l.Fence, Token: req.Token}, nil
	}
}

// Resign ends leader's leadership: ErrNotOwner unless leader carries the
// token of the campaign that holds the election, ErrNotHeld when nobody
// does.
func (s *Service) Resign(ctx context.Context, leader api.Leader) error {
	rreq := api.ResignRequest{Election: leader.Election, Value: leader.Value, Token: leader.Token}
	if err := rreq.Validate(s.Limits()); err != nil {
		return err
	}
	key, err := electionKey(leader.Election)
	if err != nil {
		return err
	}
	_, err = s.Release(ctx, api.ReleaseRequest{Key: key, Owner: ElectionOwner(leader.Value, leader.Token)})
	return err
}

// Proclaim publishes value as leader's value in one replicated step
// (fsm.OpReown): leadership, fence and session binding are kept, so there
// is no moment without a leader and no other candidate can step in.
func (s *Service) Proclaim(ctx context.Context, leader api.Leader, value string) (api.Leader, error) {
	preq := api.ProclaimRequest{Election: leader.Election, Value: leader.Value, Token: leader.Token, NewValue: value}
	if err := preq.Validate(s.Limits()); err != nil {
		return api.Leader{}, err
	}
	key, err := electionKey(leader.Election)
	if err != nil {
		return api.Leader{}, err
	}
	c := &fsm.Command{Op: fsm.OpReown, Key: key, Owner: ElectionOwner(leader.Value, leader.Token),
		Args: [][]byte{[]byte(ElectionOwner(value, leader.Token))}}
	res, err := s.r.Apply(ctx, c)
	if err != nil {
		return api.Leader{}, err
	}
	if res.Err != nil {
		return api.Leader{}, apiErr(res.Err)
	}
	leader.Value, leader.Fence = value, res.Fence
	return leader, nil
}

// Observe sends election's leader now (linearizable) and then on every
// change, as this node applies it (driven by the lock's events, no
// polling). An empty Value means no leader. Intermediate states may be
// skipped if the receiver is slow; the last one is always delivered. The
// channel is closed when ctx ends or the node closes.
func (s *Service) Observe(ctx context.Context, election string) (<-chan api.Leader, error) {
	key, err := electionKey(election)
	if err != nil {
		return nil, err
	}
	dirty := make(chan struct{}, 1)
	cancel := s.r.Subscribe(func(_ uint64, events []fsm.Event) {
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
	first, err := s.electionLeader(ctx, election, key, false)
	if err != nil {
		cancel()
		return nil, err
	}
	out := make(chan api.Leader, 1)
	out <- first
	// A change of leader is applied here promptly (wantsCommits).
	demandDone := s.r.CommitDemand()
	// Ends when ctx ends or the node closes.
	go func() {
		defer close(out)
		defer cancel()
		defer demandDone()
		last := first
		for {
			select {
			case <-dirty:
			case <-ctx.Done():
				return
			case <-s.r.Closing():
				return
			}
			// Local state already includes the entry that signalled.
			cur, err := s.electionLeader(ctx, election, key, true)
			if err != nil || cur == last {
				continue
			}
			select {
			case out <- cur:
				last = cur
			case <-ctx.Done():
				return
			case <-s.r.Closing():
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

func (s *Service) electionLeader(ctx context.Context, election, key string, stale bool) (api.Leader, error) {
	ld := api.Leader{Election: election}
	err := s.r.Read(ctx, stale, func(t *fsm.Table, now int64) {
		if h, ok := t.Inspect(key, now); ok == nil && h.Kind == fsm.KindLock && len(h.Holders) > 0 {
			ld.Value, ld.Fence = ElectionValue(h.Holders[0].Owner), h.Holders[0].Fence
		}
	})
	if err != nil {
		return api.Leader{}, fmt.Errorf("observe %q: %w", election, err)
	}
	return ld, nil
}
