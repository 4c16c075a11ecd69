package testcluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/locknode/locknode/api"
)

// Checker failures; each error wraps one of these.
var (
	ErrStaleWrite    = errors.New("testcluster: fencing violated")
	ErrLostAck       = errors.New("testcluster: acknowledged operation lost")
	ErrFenceOrder    = errors.New("testcluster: fences not strictly increasing")
	ErrDiverged      = errors.New("testcluster: nodes diverged")
	ErrLeaseTooShort = errors.New("testcluster: lease ended before its TTL")
	ErrTwoHolders    = errors.New("testcluster: more live handles for one key than its mode allows")
	ErrTwoLeaders    = errors.New("testcluster: two campaigners believed they led at once")
	ErrFenceRegress  = errors.New("testcluster: resource accepted a smaller fence after a larger one")
	ErrLeaseTooLong  = errors.New("testcluster: hold ended later than its TTL allows")
	ErrOrphan        = errors.New("testcluster: hold or waiter outlived every client that knew of it")
)

// ---- (2) fencing ----

// Resource is a simulated protected resource (a storage service, say)
// that takes a write only with a fencing token at least the highest it
// has seen — what a lock's fence is for. Unfenced turns the check off,
// to show that CheckFencing notices.
type Resource struct {
	Unfenced bool

	h       *History
	mu      sync.Mutex
	highest uint64
	writes  []Write
}

// Write is one write attempt at a Resource.
type Write struct {
	Client int
	Token  uint64
	// Arrived is when the resource saw it; SafeUntil is the writer's safe
	// deadline for its lease (send time + TTL - drift margin), both on the
	// History's clock.
	Arrived, SafeUntil time.Duration
	Accepted           bool
}

// NewResource returns a Resource timing writes on h's clock.
func NewResource(h *History) *Resource { return &Resource{h: h} }

// Write offers a write with token by a writer whose lease is safe until
// safeUntil (History clock); it reports whether it was accepted.
func (r *Resource) Write(client int, token uint64, safeUntil time.Duration) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	ok := r.Unfenced || token >= r.highest
	if ok && token > r.highest {
		r.highest = token
	}
	r.writes = append(r.writes, Write{Client: client, Token: token, Arrived: r.h.Now(), SafeUntil: safeUntil, Accepted: ok})
	return ok
}

// Highest is the highest token accepted so far.
func (r *Resource) Highest() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.highest
}

// Writes returns every attempt in arrival order.
func (r *Resource) Writes() []Write {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Write(nil), r.writes...)
}

// CheckFencing checks write attempts in arrival order: no write with a
// token below the highest accepted one was accepted (a stale holder got
// through), and no write that arrived inside its writer's safe deadline
// was refused (someone else was granted a higher fence and wrote while
// the writer's lease still held). It returns the number of stale writes
// correctly refused.
func CheckFencing(ws []Write) (staleRefused int, err error) {
	var highest uint64
	var errs []error
	for i, w := range ws {
		switch {
		case w.Accepted && w.Token < highest:
			errs = append(errs, fmt.Errorf("%w: write %d by client %d with token %d accepted after token %d", ErrStaleWrite, i, w.Client, w.Token, highest))
		case !w.Accepted && w.Arrived < w.SafeUntil:
			errs = append(errs, fmt.Errorf("%w: write %d by client %d with token %d refused inside its lease (arrived %v, safe until %v; highest %d)",
				ErrStaleWrite, i, w.Client, w.Token, w.Arrived, w.SafeUntil, highest))
		case !w.Accepted && w.Token >= highest:
			errs = append(errs, fmt.Errorf("%w: write %d with current token %d refused", ErrStaleWrite, i, w.Token))
		case !w.Accepted:
			staleRefused++
		}
		if w.Accepted {
			highest = max(highest, w.Token)
		}
	}
	return staleRefused, errors.Join(errs...)
}

// ---- (3) durability ----

// CheckDurable compares the final state with every key's last
// acknowledged operation: a key whose last acknowledged operation was a
// grant (with a TTL longer than the run) must still be held by that
// owner with that fence; one whose last was a release must not be held
// by it. Keys with an operation of unknown outcome after the last
// acknowledged one are skipped. Only keys with prefix are checked; read
// is a linearizable read of a key's holder.
func CheckDurable(ctx context.Context, ops []Op, prefix string, read func(ctx context.Context, key string) (holder string, fence uint64, err error)) error {
	type last struct {
		op      Op
		unknown bool
	}
	byKey := map[string]*last{}
	sorted := append([]Op(nil), ops...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Return < sorted[j].Return })
	for _, o := range sorted {
		if !strings.HasPrefix(o.Key, prefix) || o.Kind == OpGet {
			continue
		}
		l := byKey[o.Key]
		if l == nil {
			l = &last{}
			byKey[o.Key] = l
		}
		switch o.Outcome {
		case OK:
			l.op, l.unknown = o, false
		case Unknown:
			l.unknown = true
		}
	}
	keys := make([]string, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var errs []error
	checked := 0
	for _, k := range keys {
		l := byKey[k]
		if l.unknown || l.op.Kind == 0 {
			continue
		}
		holder, fence, err := read(ctx, k)
		if err != nil {
			return fmt.Errorf("testcluster: reading %q: %w", k, err)
		}
		checked++
		switch l.op.Kind {
		case OpAcquire, OpTryAcquire, OpExtend:
			if holder != l.op.Owner || (l.op.Fence != 0 && fence != l.op.Fence) {
				errs = append(errs, fmt.Errorf("%w: %q granted to %s (fence %d, op #%d) but held by %q (fence %d)",
					ErrLostAck, k, l.op.Owner, l.op.Fence, l.op.ID, holder, fence))
			}
		case OpRelease:
			if l.op.Released && holder == l.op.Owner {
				errs = append(errs, fmt.Errorf("%w: %q released by %s (op #%d) but still held by it", ErrLostAck, k, l.op.Owner, l.op.ID))
			}
		}
	}
	if checked == 0 && len(keys) > 0 {
		errs = append(errs, fmt.Errorf("testcluster: CheckDurable: no key had a definite last operation"))
	}
	return errors.Join(errs...)
}

// LockerReader adapts an api.Locker for CheckDurable.
func LockerReader(l api.Locker) func(ctx context.Context, key string) (string, uint64, error) {
	return func(ctx context.Context, key string) (string, uint64, error) {
		h, f, _, _, err := lockerBackend{l}.get(ctx, key)
		return h, f, err
	}
}

// ListReader reads every lock under prefix with one linearizable List
// (paged) and serves CheckDurable from it: much faster than a read per
// key for large histories.
func ListReader(ctx context.Context, l api.Locker, prefix string) (func(ctx context.Context, key string) (string, uint64, error), error) {
	type hold struct {
		owner string
		fence uint64
	}
	m := map[string]hold{}
	after := ""
	for {
		res, err := l.List(ctx, api.ListRequest{Prefix: prefix, After: after, Limit: 10000})
		if err != nil {
			return nil, err
		}
		for _, li := range res.Locks {
			for _, h := range li.Holders {
				if h.Mode == api.ModeExclusive || h.Mode == "" {
					m[li.Key] = hold{h.Owner, h.Fence}
				}
			}
		}
		if res.Next == "" {
			break
		}
		after = res.Next
	}
	return func(_ context.Context, key string) (string, uint64, error) {
		h := m[key]
		return h.owner, h.fence, nil
	}, nil
}

// ---- (4) fence order ----

// CheckFences checks that fences strictly increase over grants: a grant
// acknowledged before another was requested has a smaller fence, and no
// two grants of one key share a fence.
func CheckFences(ops []Op) error {
	var grants []Op
	for _, o := range ops {
		if (o.Kind == OpAcquire || o.Kind == OpTryAcquire) && o.Outcome == OK && o.Fence != 0 {
			grants = append(grants, o)
		}
	}
	var errs []error
	seen := map[string]Op{}
	for _, g := range grants {
		k := fmt.Sprintf("%s/%d", g.Key, g.Fence)
		if p, ok := seen[k]; ok {
			errs = append(errs, fmt.Errorf("%w: fence %d granted twice on %q (ops #%d and #%d)", ErrFenceOrder, g.Fence, g.Key, p.ID, g.ID))
		}
		seen[k] = g
	}
	byReturn := append([]Op(nil), grants...)
	sort.Slice(byReturn, func(i, j int) bool { return byReturn[i].Return < byReturn[j].Return })
	byCall := append([]Op(nil), grants...)
	sort.Slice(byCall, func(i, j int) bool { return byCall[i].Call < byCall[j].Call })
	var best Op // the largest fence among grants returned so far
	j := 0
	for _, b := range byCall {
		for j < len(byReturn) && byReturn[j].Return < b.Call {
			if byReturn[j].Fence > best.Fence {
				best = byReturn[j]
			}
			j++
		}
		if best.Fence != 0 && b.Fence <= best.Fence {
			errs = append(errs, fmt.Errorf("%w: op #%d got fence %d after op #%d had got %d", ErrFenceOrder, b.ID, b.Fence, best.ID, best.Fence))
		}
	}
	return errors.Join(errs...)
}

// ---- (5) convergence ----

// CompareSnapshots reports nodes whose snapshot bytes differ from the
// first node's (by name order). Diverging snapshots are written to
// ArtifactDir for inspection.
func CompareSnapshots(snaps map[string][]byte) error {
	names := make([]string, 0, len(snaps))
	for n := range snaps {
		names = append(names, n)
	}
	sort.Strings(names)
	var errs []error
	for _, n := range names[min(1, len(names)):] {
		a, b := snaps[names[0]], snaps[n]
		if bytes.Equal(a, b) {
			continue
		}
		i := 0
		for i < len(a) && i < len(b) && a[i] == b[i] {
			i++
		}
		where := ""
		if f, err := os.CreateTemp(ArtifactDir(), "snapshot-"+n+"-*.bin"); err == nil {
			_, _ = f.Write(b)
			f.Close()
			where = "; written to " + f.Name()
		}
		errs = append(errs, fmt.Errorf("%w: snapshot of %s (%d bytes) differs from %s's (%d bytes) at byte %d%s",
			ErrDiverged, n, len(b), names[0], len(a), i, where))
	}
	return errors.Join(errs...)
}

// CheckConverged waits until every running node has applied the same
// index and compares their FSM snapshots byte for byte. Heal and resume
// the cluster first.
func (c *Cluster) CheckConverged(ctx context.Context) error {
	for {
		snaps := map[string][]byte{}
		var top uint64
		same := true
		var first uint64
		for i := range c.N() {
			if !c.Up(i) || c.Paused(i) {
				continue
			}
			b, idx, err := c.Snapshot(i)
			if err != nil {
				return err
			}
			if len(snaps) == 0 {
				first = idx
			} else if idx != first {
				same = false
			}
			snaps[nodeID(i)] = b
			top = max(top, idx)
		}
		if same {
			return CompareSnapshots(snaps)
		}
		if err := c.WaitApplied(ctx, top); err != nil {
			return fmt.Errorf("testcluster: nodes never reached index %d: %w", top, err)
		}
	}
}

// ---- (6) leases ----

// LeaseEnd is one observed hold: its request's send time and TTL, and a
// real time by which it had certainly ended (the return time of the first
// read that found it gone, or of a competing grant).
type LeaseEnd struct {
	Owner   string
	Sent    time.Time
	TTL     time.Duration
	EndedBy time.Time
	// Margin is how early it may end: the drift margin its client keeps
	// (clock rates that differ from real time; 0: none).
	Margin time.Duration
}

// CheckLeases reports holds that ended before send time + TTL - Margin.
func CheckLeases(obs []LeaseEnd) error {
	var errs []error
	for _, o := range obs {
		if due := o.Sent.Add(o.TTL - o.Margin); o.EndedBy.Before(due) {
			errs = append(errs, fmt.Errorf("%w: hold of %s (ttl %v) gone %v before send time + ttl - margin %v",
				ErrLeaseTooShort, o.Owner, o.TTL, due.Sub(o.EndedBy), o.Margin))
		}
	}
	return errors.Join(errs...)
}

// WatchLease polls key's holder through read every step until owner no
// longer holds it, and returns the real time that read returned.
func WatchLease(ctx context.Context, key, owner string, step time.Duration, read func(ctx context.Context, key string) (string, uint64, error)) (time.Time, error) {
	w, err := WatchHold(ctx, key, owner, step, read)
	return w.GoneAt, err
}

// HoldWatch is what WatchHold saw of one hold's end. Each read took
// effect somewhere between its send and its answer, so the hold lasted at
// least until HeldSent and had ended by GoneAt; whatever lies between is
// the reads' own latency (a leaderless cluster, a read index wait,
// retries), not the hold's.
type HoldWatch struct {
	// HeldSent is when the last read that still found owner holding key
	// was sent (zero if none did).
	HeldSent time.Time
	// GoneSent and GoneAt are when the first read that found it gone was
	// sent and answered.
	GoneSent, GoneAt time.Time
	// Failed counts the reads that returned an error.
	Failed int
}

// WatchHold polls key's holder through read every step until owner no
// longer holds it, and reports when the last read that found it held was
// sent and when the first that found it gone was sent and answered.
func WatchHold(ctx context.Context, key, owner string, step time.Duration, read func(ctx context.Context, key string) (string, uint64, error)) (HoldWatch, error) {
	var w HoldWatch
	t := time.NewTicker(step)
	defer t.Stop()
	for {
		sent := time.Now()
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		holder, _, err := read(rctx, key)
		cancel()
		ret := time.Now()
		switch {
		case err != nil:
			w.Failed++
		case holder != owner:
			w.GoneSent, w.GoneAt = sent, ret
			return w, nil
		default:
			w.HeldSent = sent
		}
		select {
		case <-ctx.Done():
			return w, fmt.Errorf("testcluster: %s still held by %s: %w", key, owner, ctx.Err())
		case <-t.C:
		}
	}
}
