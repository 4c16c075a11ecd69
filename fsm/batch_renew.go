package fsm

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/locknode/locknode/fsm/reply"
)

// Batched renewals. Holding a lock costs a renewal every TTL/3 or so (a
// lock extend, a session keep-alive, a Redis client's compare-and-pexpire
// watchdog); one raft entry per renewal makes holding many locks cost
// as much log as taking them. OpBatchRenew carries many renewals in one
// entry: the leader coalesces the renewals that arrive while its previous
// renewal entry is in flight (cluster/renew_batch.go).
//
// Each renewal in the entry is applied as if it were an entry of its own
// at the same index and time, in order: its own outcome (one may fail
// because its lock was lost while the others succeed), its own request id
// remembered and answered exactly once, its own NoForce and KeysOnly.
// The entry's due work (expiries, hand-offs) runs once, before the first
// renewal, as for any entry; so a lease that ended before the entry's
// time is not renewed by it, exactly as with one entry per renewal.
//
// Only renewals may be batched (Renewal): ops that can neither grant a
// lock nor wait, so the per-entry rules (a fence is the index of the
// entry that grants) hold as they do for one entry per renewal.

// VersionBatchRenew is the cluster version that introduced OpBatchRenew.
// Kept in its own constant so a renumbering of cluster versions is a
// change of this line.
const VersionBatchRenew = 3

// OpBatchRenew applies Args, each the encoding of one renewal command
// (Renewal), in order, as if each were an entry of its own at this
// entry's index and time; Result.Batch holds their results. Cluster
// version VersionBatchRenew.
const OpBatchRenew Op = 18

// MaxBatchRenew bounds the renewals of one OpBatchRenew entry; a longer
// one is refused whole (ErrBadCommand).
const MaxBatchRenew = 4096

func init() { opVersion[OpBatchRenew] = VersionBatchRenew }

// Renewal reports whether cmd may go into an OpBatchRenew entry by its op
// and fields alone: a lock extend, a session keep-alive, a Redis PEXPIRE
// or EXPIRE to a positive time, or an EVALSHA (not read-only), which the
// FSM refuses alone when the cached script is not a renewal script
// (RenewalScript). A proposer batches an EVALSHA only of a known text
// (RenewalSHA); this looser rule is the FSM's, so that a newly known text
// needs no new op, only its cluster version (VersionRedissonRenew): an
// older binary refuses it in a batch.
func Renewal(cmd *Command) bool {
	switch cmd.Op {
	case OpExtend, OpSessionKeepAlive:
		return true
	case OpRedis:
		return len(cmd.Args) == 3 && renewalCommand(cmd.Args[0]) && positive(cmd.Args[2])
	case OpEvalSHA:
		return !cmd.ReadOnly
	}
	return false
}

// positive reports whether b is a decimal integer above zero: a PEXPIRE
// to zero or below deletes the key, which is no renewal.
func positive(b []byte) bool {
	n, err := strconv.ParseInt(string(b), 10, 64)
	return err == nil && n > 0
}

func renewalCommand(name []byte) bool {
	return strings.EqualFold(string(name), "pexpire") || strings.EqualFold(string(name), "expire")
}

// RenewalScript reports whether the cached script sha is a renewal at
// the active cluster version: a compare-and-pexpire (redsync's Extend and
// the like: scriptFamily famCAPE or famCAPE1), or from
// VersionRedissonRenew on Redisson's hash-lock renewal (famHashRenew);
// and known whether the cache holds sha at all. It may compile the
// script's classification into the engine's cache (which does not depend
// on the version): the caller holds the table exclusively.
func (t *Table) RenewalScript(sha string) (renewal, known bool) {
	sha = strings.ToLower(sha)
	script, ok := t.scripts.cache.get(sha)
	if !ok {
		return false, false
	}
	return renewalFamily(t.family(sha, script), t.Version()), true
}

// renewalFamily reports whether a script of family fam is a renewal at
// cluster version v.
func renewalFamily(fam scriptFamily, v uint32) bool {
	switch fam {
	case famCAPE, famCAPE1:
		return true
	case famHashRenew:
		return v >= VersionRedissonRenew
	}
	return false
}

// RenewalSHA reports whether sha (hex) is the SHA1 of a renewal script
// text exactly as a known client sends it, at the active cluster version
// v: what a proposer may batch without looking at the table
// (Table.RenewalScript checks the cached text again when the entry is
// applied). A variant of the text (other white space) runs natively all
// the same but is proposed alone.
func RenewalSHA(sha string, v uint32) bool {
	fam, ok := renewalSHAs[strings.ToLower(sha)]
	return ok && renewalFamily(fam, v)
}

// renewalSHAs are the SHA1s of the renewal texts of hotScripts as
// written there, and of go-redsync/redsync v4's touchScript (scripts.go),
// byte for byte, with their families.
var renewalSHAs = func() map[string]scriptFamily {
	m := map[string]scriptFamily{"d75bb8b5bd13532ddedd17762e772346e39b321e": famCAPE}
	for _, h := range hotScripts {
		if renewalFamily(h.fam, MaxClusterVersion) {
			m[ScriptSHA([]byte(h.text))] = h.fam
		}
	}
	return m
}()

// renewalSHAText maps each of renewalSHAs to itself: the decoder of a
// batch takes a renewal's Key from here rather than copying the same
// 40 bytes out of every renewal.
var renewalSHAText = func() map[string]string {
	m := make(map[string]string, len(renewalSHAs))
	for sha := range renewalSHAs {
		m[sha] = sha
	}
	return m
}()

// decodeRenewals decodes the renewals of an OpBatchRenew entry before
// anything changes. One that needs a newer binary halts the table (as a
// whole entry would); a malformed one, one that is not a renewal, or one
// whose op or field is not active refuses the whole entry: a proposer
// never sends such a batch.
//
// The renewals are decoded into t.renewals, reused from entry to entry:
// holding many locks applies a batch per commit round on every node, and
// a Command apiece was most of what the apply allocated (GC of a large
// table is paid per allocated byte). Nothing keeps a *Command past its
// apply (remember copies the strings it needs); applyRenewals clears the
// slab so it holds no entry's bytes after. Their KEYS and ARGV lists are
// cut from a second slab (t.renewLists) the same way, and a known renewal
// script's SHA1 is not copied.
func (t *Table) decodeRenewals(cmd *Command) (subs []Command, halt, refuse error) {
	if len(cmd.Args) == 0 || len(cmd.Args) > MaxBatchRenew {
		return nil, nil, errf(ErrBadCommand, "batched renewals: %d, want 1..%d", len(cmd.Args), MaxBatchRenew)
	}
	if cap(t.renewals) < len(cmd.Args) {
		t.renewals = make([]Command, len(cmd.Args))
	}
	subs = t.renewals[:len(cmd.Args)]
	// A renewal has three lists' items at most (PEXPIRE's Args; a
	// script's one key and two arguments), and a fourth spare: a batch
	// that needs more takes the rest from the heap.
	if want := 4 * len(cmd.Args); cap(t.renewLists) < want {
		t.renewLists = make([][]byte, 0, want)
	}
	d := decoder{lists: &t.renewLists, internSHA: true}
	defer func() {
		if halt != nil || refuse != nil {
			t.clearRenewals(subs)
		}
	}()
	for i, b := range cmd.Args {
		s := &subs[i]
		if err := decodeCommandInto(s, b, d); err != nil {
			if errors.Is(err, ErrNeedVersion) {
				return nil, err, nil
			}
			return nil, nil, errf(ErrBadCommand, "batched renewal %d: %v", i, err)
		}
		if !Renewal(s) {
			return nil, nil, errf(ErrBadCommand, "batched renewal %d: op %d is not a renewal", i, s.Op)
		}
		if h, r := t.checkVersion(s); h != nil || r != nil {
			if h != nil {
				return nil, h, nil
			}
			return nil, nil, errf(ErrBadCommand, "batched renewal %d: %v", i, r)
		}
	}
	return subs, nil, nil
}

// clearRenewals clears the decoded renewals and their lists, so the slabs
// hold no entry's bytes once it is applied.
func (t *Table) clearRenewals(subs []Command) {
	clear(subs)
	clear(t.renewLists)
	t.renewLists = t.renewLists[:0]
}

// SkipBatchResults says whether the entries applied next may leave out
// Result.Batch of an OpBatchRenew entry (each renewal's own result): the
// node that proposed the entry reads them, and a node with no batch of
// its own awaiting an answer (a follower) has no reader for them. It
// changes what Apply returns, never what it decides: the renewals are
// applied, remembered and emit their events alike.
func (o *batchOutputs) SkipBatchResults(skip bool) { o.skipBatch = skip }

// SkipRenewalChanges says whether the renewals of the OpBatchRenew
// entries applied next may leave out their EvChanged and EvValueChanged
// events (a lease or a TTL moved): on a node where nothing reads them (no
// client-side caching, no mirror, no key watch) they were the largest
// allocation of holding many locks. Every other event is emitted alike,
// and the table changes alike either way: it changes what Apply returns,
// never what it decides. Default off (emitted).
func (o *batchOutputs) SkipRenewalChanges(skip bool) { o.skipRenewChanges = skip }

// applyRenewals applies the decoded renewals of one entry in order, each
// with its own exactly-once answer. Their events join the entry's.
func (t *Table) applyRenewals(ctx *applyCtx, subs []Command) Result {
	defer t.clearRenewals(subs)
	var out []Result
	if !t.skipBatch {
		out = make([]Result, len(subs))
	}
	if t.skipRenewChanges {
		// Due work and the entry's settling ran before: only the
		// renewals' own changes are left out. No decision reads the
		// events (the due budget counts them before the first renewal).
		ctx.quietChanges = true
	} else {
		// A Redis renewal of a key emits one event (EvChanged or
		// EvValueChanged; an extend or a keep-alive none): room for them
		// all at once, not a doubling per power of two.
		redis := 0
		for i := range subs {
			if op := subs[i].Op; op == OpRedis || op == OpEvalSHA {
				redis++
			}
		}
		ctx.events = slices.Grow(ctx.events, redis)
	}
	t.warmSum = t.warmRenewals(subs)
	for i := range subs {
		s := &subs[i]
		ctx.noForce, ctx.keysOnly = s.NoForce, s.KeysOnly
		nev := len(ctx.events)
		if r, ok := t.dedupe(ctx, s); ok {
			if out != nil {
				r.Now = ctx.now
				out[i] = r
			}
			continue
		}
		var r Result
		switch s.Op {
		case OpExtend:
			r = t.extend(ctx, s)
		case OpSessionKeepAlive:
			r = t.sessionKeepAlive(ctx, s)
		case OpRedis:
			r = Result{Reply: t.redis(ctx, s.Args)}
		case OpEvalSHA:
			if renewal, known := t.RenewalScript(s.Key); known && !renewal {
				r = Result{Err: errf(ErrBadCommand, "batched renewal %d: script %s is not a renewal script", i, s.Key)}
			} else {
				// An unknown sha answers NOSCRIPT, as it would alone.
				r = Result{Reply: t.evalSHA(ctx, s.Key, s.KeysB, s.Args, false)}
			}
		default:
			// Not reached: decodeRenewals let only renewals in.
			r = Result{Reply: reply.NewError(fmt.Sprintf("ERR op %d is not a renewal", s.Op))}
		}
		t.flushFreed(ctx)
		r.Index = ctx.index
		t.remember(ctx, s, r)
		if out != nil {
			r.Now = ctx.now
			// What this renewal caused, as its own entry's result would say.
			r.Events = ctx.events[nev:len(ctx.events):len(ctx.events)]
			out[i] = r
		}
	}
	ctx.noForce, ctx.keysOnly, ctx.quietChanges = false, false, false
	return Result{Batch: out}
}

// warmRenewals looks up every renewal's key before the renewals are
// applied, and reads a little of what it finds (the value, a lock's
// owner, a Redis value's body) without keeping or changing anything. On
// a key map of many locks each lookup is mostly cache misses (the map's
// group, the key's bytes, the value, the owner's bytes), and applied one
// after the other each renewal waits for its own; here no lookup depends
// on the one before, so the processor overlaps their misses and the
// renewals then find what they touch in cache (see BenchmarkBatchRenew100k).
// Output only: each renewal looks its key up again.
func (t *keySpace) warmRenewals(subs []Command) (sum uint64) {
	for i := range subs {
		var v *Value
		switch s := &subs[i]; s.Op {
		case OpEvalSHA:
			if len(s.KeysB) > 0 {
				v = t.keys[string(s.KeysB[0])]
			}
		case OpRedis:
			v = t.keys[string(s.Args[1])]
		case OpExtend:
			v = t.keys[s.Key]
		}
		if v == nil {
			continue
		}
		sum += v.Version + uint64(v.deadline())
		if o := v.h0.Owner; o != "" {
			sum += uint64(o[0])
		}
	}
	return sum
}
