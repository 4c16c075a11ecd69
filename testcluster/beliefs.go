package testcluster

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"
)

// ---- (7) what clients believed, on the History's clock ----

// Belief is an interval during which one client surface believed it held
// Key: a Go Lock handle from its grant answer until its Context was done
// (or Unlock was called), a Leadership from Elect's return until Done, a
// `locknode lock` child from its first to its last write. Times
// are on the History's clock, the one reference clock of a run.
type Belief struct {
	Key    string // lock key, or ElectionPrefix+name for a leadership
	Holder string // which handle, campaign or child
	Fence  uint64
	// Limit is how many may believe at once: 1 for exclusive locks and
	// elections, N for a semaphore of N permits.
	Limit    int
	From, To time.Duration
}

func (b Belief) String() string {
	return fmt.Sprintf("%s fence %d [%v,%v]", b.Holder, b.Fence, b.From, b.To)
}

// CheckHandles checks (a): per key, no instant at which more handles
// believed they held it than its Limit allows, and, for exclusive holds,
// a belief that began after another had ended carries a larger fence.
func CheckHandles(bs []Belief) error { return checkExclusion(bs, ErrTwoHolders) }

// CheckLeaders checks (b): at most one campaigner per election believed
// it led at any instant (beliefs with Limit 1), with fences increasing
// from one leadership to the next.
func CheckLeaders(bs []Belief) error { return checkExclusion(bs, ErrTwoLeaders) }

func checkExclusion(bs []Belief, sentinel error) error {
	byKey := map[string][]Belief{}
	for _, b := range bs {
		byKey[b.Key] = append(byKey[b.Key], b)
	}
	keys := make([]string, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var errs []error
	for _, k := range keys {
		list := byKey[k]
		sort.SliceStable(list, func(i, j int) bool { return list[i].From < list[j].From })
		// A sweep over starts: live holds every belief that started
		// earlier and has not ended by this start. An interval that ends
		// exactly when another starts does not overlap it.
		var live []Belief
		for _, b := range list {
			kept := live[:0]
			for _, l := range live {
				if l.To > b.From {
					kept = append(kept, l)
				} else if b.Fence != 0 && l.Fence != 0 && b.Fence <= l.Fence && max(b.Limit, l.Limit) <= 1 {
					// Exclusive only: a semaphore's permits are granted
					// side by side, and a holder that learns of its earlier
					// permit late may begin believing after a later one ended.
					errs = append(errs, fmt.Errorf("%w: %q: %v began after %v ended, with a fence not larger", sentinel, k, b, l))
				}
			}
			live = kept
			if superseded(live, b) {
				continue
			}
			live = append(live, b)
			if limit := max(b.Limit, 1); len(live) > limit {
				names := make([]string, len(live))
				for i, l := range live {
					names[i] = l.String()
				}
				errs = append(errs, fmt.Errorf("%w: %q at %v (limit %d): %s", sentinel, k, b.From, limit, strings.Join(names, "; ")))
			}
		}
	}
	return errors.Join(errs...)
}

// superseded reports whether b is the late answer to a grant already
// superseded: an exclusive belief that ended the instant it began (the
// handle's Context, or the Leadership's Done, was closed when Lock or
// Elect returned it), with a fence below one believed at that instant.
// The client never had an instant in which to act on it (the surfaces
// check Done before each write, and the resource would refuse the older
// fence), so it is no second believer; the one live with the larger fence
// was granted after it, as it must be.
func superseded(live []Belief, b Belief) bool {
	if b.To > b.From || b.Fence == 0 || max(b.Limit, 1) > 1 {
		return false
	}
	for _, l := range live {
		if l.Fence > b.Fence {
			return true
		}
	}
	return false
}

// FenceAccept is one write a fenced resource accepted, in the order it
// accepted them.
type FenceAccept struct {
	Resource string
	Token    uint64
	By       string
	At       time.Duration
}

// CheckAccepted checks (c): per resource, every accepted token is at
// least the one accepted before it (equal: the same grant writing
// again).
func CheckAccepted(as []FenceAccept) error {
	last := map[string]FenceAccept{}
	var errs []error
	for i, a := range as {
		if p, ok := last[a.Resource]; ok && a.Token < p.Token {
			errs = append(errs, fmt.Errorf("%w: %q: write %d by %s with token %d at %v accepted after token %d by %s at %v",
				ErrFenceRegress, a.Resource, i, a.By, a.Token, a.At, p.Token, p.By, p.At))
		}
		if p, ok := last[a.Resource]; !ok || a.Token >= p.Token {
			last[a.Resource] = a
		}
	}
	return errors.Join(errs...)
}

// HoldEnd is one hold whose end was watched. Last is a time no earlier
// than its last grant or extend took effect (the answer to it, or when
// the client that could renew it went away). HeldSeen is when the last
// read that still found it held was sent (at or before Last: none did):
// that read took effect no earlier, so the hold certainly lasted until
// then. GoneSent and EndedBy are when the first read that found it gone
// was sent and answered; Failed counts the reads that failed in between.
// Rate is the slowest clock rate of any node while it was watched (0 or
// more than 1: 1).
type HoldEnd struct {
	Key, Owner        string
	TTL               time.Duration
	Last, HeldSeen    time.Duration
	GoneSent, EndedBy time.Duration
	Failed            int
	Rate              float64
}

// Allowed is how long after Last the hold may still be seen held: its
// TTL and slack, stretched by a slow clock (a leader at rate r times the
// TTL, and the idle time before it was elected, at r).
func (h HoldEnd) Allowed(slack time.Duration) time.Duration {
	r := h.Rate
	if r <= 0 || r > 1 {
		r = 1
	}
	return time.Duration(float64(h.TTL+slack) / r)
}

// CheckHoldEnds checks (e): no hold was still seen held later than its
// TTL plus slack (one tick, one election, a pause), stretched by the
// slowest clock (HoldEnd.Allowed), after Last. It judges by HeldSeen, a
// lower bound of the end, not by EndedBy: the read that first found the
// hold gone may itself have waited (no quorum, no leader, a partitioned
// node, retries), and its wait is not the hold's.
func CheckHoldEnds(hs []HoldEnd, slack time.Duration) error {
	var errs []error
	for _, h := range hs {
		if h.HeldSeen <= h.Last {
			continue
		}
		if held, allowed := h.HeldSeen-h.Last, h.Allowed(slack); held > allowed {
			errs = append(errs, fmt.Errorf("%w: %q held by %s (ttl %v) still held %v after its last grant or extend, allowed %v "+
				"(slack %v, slowest clock rate %.2f; first seen gone by a read sent %v and answered %v after it; %d reads failed)",
				ErrLeaseTooLong, h.Key, h.Owner, h.TTL, held, allowed, slack, h.Rate, h.GoneSent-h.Last, h.EndedBy-h.Last, h.Failed))
		}
	}
	return errors.Join(errs...)
}

// Leftover is what a key held when every client had stopped: a hold
// (Owner, TTL and when it was seen gone) or queued waiters.
type Leftover struct {
	Key, Owner string
	TTL        time.Duration
	EndedBy    time.Duration
	Waiters    int
}

// CheckLeftovers checks (d): after every client stopped at end, no hold
// lasted longer than its TTL plus slack, and no waiter stayed queued
// (nobody waits for it: a later grant would go to nobody).
func CheckLeftovers(end time.Duration, ls []Leftover, slack time.Duration) error {
	var errs []error
	for _, l := range ls {
		if l.Waiters > 0 {
			errs = append(errs, fmt.Errorf("%w: %q has %d waiters queued after every client stopped", ErrOrphan, l.Key, l.Waiters))
		}
		if l.Owner != "" && l.EndedBy-end > l.TTL+slack {
			errs = append(errs, fmt.Errorf("%w: %q held by %s (ttl %v) for %v after every client stopped (allowed %v)",
				ErrOrphan, l.Key, l.Owner, l.TTL, l.EndedBy-end, l.TTL+slack))
		}
	}
	return errors.Join(errs...)
}
