package cluster

import (
	"context"
	"sync"
	"time"

	"github.com/locknode/locknode/api"
)

// Activity samples: what this node applied per second of its wall clock
// (grants, releases, expiries, forced releases, acquires that queued, and
// the p99 of queue waits), over the last ActivityWindow, for the
// dashboard's charts. A fixed ring of one slot per second, so its memory
// does not depend on load.

// DefaultActivityWindow is Config.ActivityWindow's default;
// MaxActivityWindow the largest accepted.
const (
	DefaultActivityWindow = 5 * time.Minute
	MaxActivityWindow     = time.Hour
)

// sample is one second's counts; waits counts queue waits by
// api.WaitBucket.
type sample struct {
	sec                                                  int64
	grants, releases, expiries, forced, contended, nwait int
	waits                                                [api.WaitBuckets]uint32
}

func (s *sample) wait(ms int64) {
	s.waits[api.WaitBucket(ms)]++
	s.nwait++
}

// p99 returns the bucket holding the 99th percentile wait and its upper
// edge (the last edge for the open bucket); 0, 0 without waits.
func (s *sample) p99() (bucket int, ms int64) {
	if s.nwait == 0 {
		return 0, 0
	}
	rank := (s.nwait*99 + 99) / 100 // ceil(0.99 n)
	seen := 0
	last := len(api.WaitBucketEdgesMs)
	for b, c := range s.waits {
		seen += int(c)
		if seen >= rank {
			return b, api.WaitBucketEdgesMs[min(b, last-1)]
		}
	}
	return last, api.WaitBucketEdgesMs[last-1]
}

// empty reports whether s counts nothing (waits holds counts only when
// nwait does).
func (s *sample) empty() bool {
	return s.grants == 0 && s.releases == 0 && s.expiries == 0 && s.forced == 0 && s.contended == 0 && s.nwait == 0
}

func (s *sample) merge(o *sample) {
	s.grants += o.grants
	s.releases += o.releases
	s.expiries += o.expiries
	s.forced += o.forced
	s.contended += o.contended
	if o.nwait == 0 {
		return
	}
	s.nwait += o.nwait
	for i, c := range o.waits {
		s.waits[i] += c
	}
}

// activity is the ring of per-second samples.
type activity struct {
	mu   sync.Mutex
	now  func() time.Time
	ring []sample // slot sec % len
}

func newActivity(window time.Duration, now func() time.Time) *activity {
	return &activity{now: now, ring: make([]sample, max(int(window/time.Second), 1))}
}

// add counts c in the current second.
func (a *activity) add(c *sample) {
	if c.empty() {
		return
	}
	sec := a.now().Unix()
	a.mu.Lock()
	s := &a.ring[int(uint64(sec)%uint64(len(a.ring)))]
	if s.sec != sec {
		*s = sample{sec: sec}
	}
	s.merge(c)
	a.mu.Unlock()
}

// samples returns one sample per second of the window, oldest first,
// ending with the current second; seconds without activity are zero.
func (a *activity) samples() []api.ActivitySample {
	now := a.now().Unix()
	a.mu.Lock()
	defer a.mu.Unlock()
	n := int64(len(a.ring))
	out := make([]api.ActivitySample, 0, n)
	for sec := now - n + 1; sec <= now; sec++ {
		as := api.ActivitySample{UnixSec: sec}
		if s := &a.ring[int(uint64(sec)%uint64(n))]; s.sec == sec {
			as.Grants, as.Releases, as.Expiries, as.Forced = s.grants, s.releases, s.expiries, s.forced
			as.Contended = s.contended
			as.WaitP99Bucket, as.WaitP99Ms = s.p99()
		}
		out = append(out, as)
	}
	return out
}

// Activity returns this node's per-second activity over the last
// Config.ActivityWindow, oldest first. It never waits; ctx only cancels
// it early.
func (n *Node) Activity(ctx context.Context) (api.Activity, error) {
	if err := ctx.Err(); err != nil {
		return api.Activity{}, err
	}
	return api.Activity{Node: n.id, Samples: n.history.activity.samples(), WaitBuckets: api.WaitBucketLabels()}, nil
}

// PeerHTTPAddrs lists the members with their HTTP API addresses, this
// node first; see PeerAddrs for how they are learned and how long it may
// wait.
func (n *roster) PeerHTTPAddrs(ctx context.Context) []api.PeerAddr {
	var out []api.PeerAddr
	for _, a := range n.PeerAddrs(ctx) {
		p := api.PeerAddr{ID: a.ID, HTTP: a.HTTP, Self: a.Self}
		if a.Self {
			out = append([]api.PeerAddr{p}, out...)
		} else {
			out = append(out, p)
		}
	}
	return out
}
