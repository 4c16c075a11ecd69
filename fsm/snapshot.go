package fsm

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
)

// Snapshot format, version 5. Integers are varints (signed: zig-zag),
// strings are uvarint length + bytes, maps are written in key order so two
// equal tables give byte-identical snapshots:
//
//	byte     version (5)
//	uvarint  the active cluster version (every format from 5 on has it
//	         here, so that a binary that does not know a newer format
//	         can still say which cluster version it needs)
//	varint   now; uvarint applied
//	keys     count, then per key in order: key, value (kind, deadline,
//	         version, kind-specific body; a lock: permits, fence,
//	         delay-until, holders in grant order: owner, mode, count,
//	         reentrant, fence, deadline, ttl, session, lock-delay, hard
//	         limit, granted, extended, metadata)
//	waiters  count, then in id order: every Waiter field (metadata last)
//	queues   count, then per key in order: key, waiter ids in queue order
//	sessions count, then in id order: id, ttl, deadline
//	fences   count, then per resource in order: resource, token
//	reqids   count, then oldest first: id, op, owner, expiry, error code
//	         (fsm.ErrorCode: 1 + index in errCodes; 0 = none), flags (granted 1, queued 2,
//	         released 4), fence, deadline, count
//	tombs    count, then per key in order: key, count, then (owner, until) oldest first
//	scripts  count, then the texts SCRIPT LOAD keeps, in SHA1 order;
//	         count, then the texts EVAL cached, least recently used first
//	uvarint  the highest fence ever granted
//
// Metadata is a count, then name and value per entry in name order.
//
// Version 4 (still restored) has no cluster version: it restores as
// cluster version 1. A new format is written only once the cluster
// version that introduced it is active (Table.snapFormat), so a node
// that does not know it never receives it before it halts on that
// version's activation entry.
//
// Version 3 (still restored) has no grant and renewal times and no
// metadata in holds, and no queue time and metadata in waiters: they
// restore as zero (unknown) and empty.
//
// Version 2 (still restored) differs in its tail: one count and the script
// texts in SHA1 order, from a cache that did not tell SCRIPT LOAD from
// EVAL (Restore keeps them all as loaded scripts, so no EVALSHA that
// worked before stops working; SCRIPT FLUSH empties them), and no highest
// fence, which its restore takes to be the snapshot's applied index (no
// fence can be above it, so no granted token is refused). Nodes that
// restored such snapshots at different indexes agree again once a grant
// is applied after the upgrade; upgrade every node before relying on the
// registry's refusals.
//
// The due heap and the session indexes are derived and rebuilt by Restore.
const (
	snapVersion   = 5
	snapVersionV4 = 4 // no cluster version
	snapVersionV3 = 3 // no hold and waiter times, no metadata
	snapVersionV2 = 2 // as 3, and one script list, no highest fence
)

// enc appends the encoding to buf and hands it to w in pieces of about
// encChunk bytes: one append per field, where a bufio.Writer costs a call
// and a copy per field, which shows in the pause a snapshot makes.
type enc struct {
	w   io.Writer
	buf []byte
	off int64 // bytes handed to w so far
	err error // the first error from w; later writes are dropped

	touched uint64 // see touch
}

const (
	encChunk = 1 << 20
	// encDirect: a string or byte slice this long goes straight to w
	// rather than through buf, so buf stays about encChunk bytes.
	encDirect = 64 << 10
)

func newEnc(w io.Writer) *enc {
	return &enc{w: w, buf: make([]byte, 0, encChunk+encDirect)}
}

// pos is the offset of the next byte in the output.
func (e *enc) pos() int64 { return e.off + int64(len(e.buf)) }

func (e *enc) flush() {
	if len(e.buf) > 0 && e.err == nil {
		_, e.err = e.w.Write(e.buf)
	}
	e.off += int64(len(e.buf))
	e.buf = e.buf[:0]
}

// more flushes buf once it holds a chunk; called between items.
func (e *enc) more() {
	if len(e.buf) >= encChunk {
		e.flush()
	}
}

func (e *enc) byte1(b byte)     { e.buf = append(e.buf, b) }
func (e *enc) uvarint(v uint64) { e.buf = binary.AppendUvarint(e.buf, v) }
func (e *enc) varint(v int64)   { e.buf = binary.AppendVarint(e.buf, v) }

func (e *enc) str(v string) {
	e.uvarint(uint64(len(v)))
	if len(v) < encDirect {
		e.buf = append(e.buf, v...)
		return
	}
	e.flush()
	if e.err == nil {
		_, e.err = io.WriteString(e.w, v)
	}
	e.off += int64(len(v))
}

func (e *enc) bytes(v []byte) {
	e.uvarint(uint64(len(v)))
	e.raw(v)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Snapshot writes the table's complete state to w. The caller holds the
// same lock as for Apply (the table must not change meanwhile).
func (t *Table) Snapshot(w io.Writer) error {
	e := newEnc(w)
	t.encodeHead(e)
	kvs := sortedValues(t.keys)
	e.uvarint(uint64(len(kvs)))
	for _, kv := range kvs {
		e.str(kv.k)
		e.value(kv.v)
		e.more()
	}
	t.encodeTail(e)
	e.flush()
	return e.err
}

func (t *Table) encodeHead(e *enc) {
	e.byte1(t.snapFormat())
	e.uvarint(uint64(t.Version()))
	e.varint(t.now)
	e.uvarint(t.applied)
}

// encodeTail encodes everything after the key space.
func (t *Table) encodeTail(e *enc) {
	ids := sortedKeys(t.waiters)
	e.uvarint(uint64(len(ids)))
	for _, id := range ids {
		w := t.waiters[id]
		e.str(w.ID)
		e.uvarint(uint64(len(w.Keys)))
		for _, k := range w.Keys {
			e.str(k)
		}
		e.str(w.Owner)
		e.uvarint(uint64(w.Mode))
		e.varint(int64(w.Permits))
		e.varint(w.TTL)
		e.varint(w.Deadline)
		e.str(w.Session)
		e.uvarint(b2u(w.Reentrant))
		e.varint(w.LockDelay)
		e.varint(w.MaxHold)
		e.uvarint(w.Enqueued)
		e.varint(w.Queued)
		e.meta(w.Meta)
		e.more()
	}

	qkeys := sortedKeys(t.queues)
	e.uvarint(uint64(len(qkeys)))
	for _, k := range qkeys {
		e.str(k)
		q := t.queues[k]
		e.uvarint(uint64(len(q)))
		for _, w := range q {
			e.str(w.ID)
		}
		e.more()
	}

	sids := sortedKeys(t.sessions)
	e.uvarint(uint64(len(sids)))
	for _, id := range sids {
		ss := t.sessions[id]
		e.str(ss.ID)
		e.varint(ss.TTL)
		e.varint(ss.Deadline)
		e.more()
	}

	fkeys := sortedKeys(t.fences)
	e.uvarint(uint64(len(fkeys)))
	for _, k := range fkeys {
		e.str(k)
		e.uvarint(t.fences[k])
		e.more()
	}

	x := &t.reqs
	e.uvarint(uint64(x.len()))
	x.live(func(r *reqEntry) {
		e.str(r.id)
		e.uvarint(uint64(r.op))
		e.str(r.owner)
		e.varint(r.expires)
		e.uvarint(uint64(r.err))
		e.uvarint(uint64(r.flags))
		e.uvarint(r.fence)
		e.varint(r.deadline)
		e.varint(int64(r.count))
		e.more()
	})

	tkeys := sortedKeys(t.tombs)
	e.uvarint(uint64(len(tkeys)))
	for _, k := range tkeys {
		tb := t.tombs[k]
		e.str(k)
		e.uvarint(uint64(len(tb.recent)))
		for _, r := range tb.recent {
			e.str(r.owner)
			e.varint(r.until)
		}
		e.more()
	}

	loaded, evals := t.scripts.cache.snapshot()
	for _, list := range [][][]byte{loaded, evals} {
		e.uvarint(uint64(len(list)))
		for _, sc := range list {
			e.bytes(sc)
			e.more()
		}
	}
	e.uvarint(t.maxFence)
	t.encodeNext(e)
}

// keyValue is one key of the key space as Snapshot sorts them: p is
// the 8 bytes of the key after the prefix every key shares, big-endian
// and zero-padded, so most comparisons are of two integers in the slice
// rather than of two strings scattered over the heap.
type keyValue struct {
	p uint64
	k string
	v *Value
}

// sharedPrefix shortens common (a prefix length of first) to the prefix
// first shares with k.
func sharedPrefix[S ~string | ~[]byte](first, k S, common int) int {
	n := min(common, len(k))
	i := 0
	for i < n && k[i] == first[i] {
		i++
	}
	return i
}

// sortedValues returns the key space in key order.
func sortedValues(keys map[string]*Value) []keyValue {
	kvs := make([]keyValue, 0, len(keys))
	common := -1 // length of the prefix all keys share
	var first string
	for k, v := range keys {
		kvs = append(kvs, keyValue{k: k, v: v})
		if common < 0 {
			first, common = k, len(k)
			continue
		}
		common = sharedPrefix(first, k, common)
	}
	for i := range kvs {
		kvs[i].p = prefix8(kvs[i].k, max(common, 0))
	}
	// Equal prefixes fall back to comparing the keys: a key whose rest is
	// shorter than 8 bytes pads with zeros, so p orders like the keys do
	// (a difference in p is a difference in the first 8 bytes after the
	// shared prefix, or a key ending before the other).
	slices.SortFunc(kvs, func(a, b keyValue) int {
		if a.p != b.p {
			return cmp.Compare(a.p, b.p)
		}
		return strings.Compare(a.k, b.k)
	})
	return kvs
}

// prefix8 is k[from:from+8] as a big-endian integer, zero-padded.
func prefix8[S ~string | ~[]byte](k S, from int) uint64 {
	var p uint64
	for i := 0; i < 8; i++ {
		p <<= 8
		if j := from + i; j < len(k) {
			p |= uint64(k[j])
		}
	}
	return p
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

func (e *enc) value(v *Value) {
	if v.valueData == nil && v.h0.Owner != "" {
		// Most values at scale: a lock with one holder and no
		// semaphore size, lock-delay or kept fence, encoded as the
		// general case below does with those fields zero.
		e.buf = append(e.buf, byte(KindLock), 0) // kind, deadline
		e.uvarint(v.Version)
		e.byte1(0) // permits
		e.uvarint(v.h0.Fence)
		e.buf = append(e.buf, 0, 1) // delay-until, holders
		e.hold(&v.h0)
		return
	}
	e.byte1(byte(v.Kind()))
	e.varint(v.deadline())
	e.uvarint(v.Version)
	switch v.Kind() {
	case KindString:
		e.bytes(v.Str)
	case KindHash:
		fs := sortedKeys(v.Hash)
		e.uvarint(uint64(len(fs)))
		for _, f := range fs {
			e.str(f)
			e.bytes(v.Hash[f])
			e.more()
		}
	case KindSet:
		ms := sortedKeys(v.Set)
		e.uvarint(uint64(len(ms)))
		for _, m := range ms {
			e.str(m)
			e.more()
		}
	case KindZSet:
		ms := sortedKeys(v.ZSet)
		e.uvarint(uint64(len(ms)))
		for _, m := range ms {
			e.str(m)
			e.buf = binary.LittleEndian.AppendUint64(e.buf, math.Float64bits(v.ZSet[m]))
			e.more()
		}
	case KindList:
		e.uvarint(uint64(len(v.List)))
		for _, it := range v.List {
			e.bytes(it)
			e.more()
		}
	case KindLock:
		l := v.lock()
		e.varint(int64(l.Permits()))
		e.uvarint(l.Fence())
		e.varint(l.DelayUntil())
		e.uvarint(uint64(l.numHolders()))
		for i := 0; i < l.numHolders(); i++ {
			e.hold(l.holder(i))
		}
	}
}

func (e *enc) hold(h *hold) {
	e.str(h.Owner)
	e.byte1(byte(h.Mode))
	e.varint(int64(h.Count))
	e.uvarint(b2u(h.Reentrant))
	e.uvarint(h.Fence)
	e.varint(h.Deadline)
	e.varint(h.TTL)
	e.str(h.session())
	e.varint(h.lockDelay())
	e.varint(h.hardLimit())
	e.varint(h.Granted)
	e.varint(h.Extended)
	var packed string
	if h.opt != nil {
		packed = h.opt.meta
	}
	n := 0
	eachMeta(packed, func(string, string) { n++ })
	e.uvarint(uint64(n))
	eachMeta(packed, func(name, value string) {
		e.str(name)
		e.str(value)
	})
}

func (e *enc) meta(m Meta) {
	e.uvarint(uint64(len(m)))
	for _, x := range m {
		e.str(x.Name)
		e.str(x.Value)
	}
}

// snapReader decodes from a window over r; the first error sticks and
// later reads return zero. Varints and short strings are decoded straight
// from the window, without a call per byte.
type snapReader struct {
	r   io.Reader
	buf []byte // buf[pos:] is read but not yet decoded
	pos int
	eof bool // r is exhausted
	err error

	version byte // the snapshot's format version

	scratch []byte // reused to build strings from several pieces
}

func (d *snapReader) fail(err error) {
	if d.err == nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		d.err = err
	}
}

// fill makes at least n bytes available in the window, unless r ends
// first; n must not exceed the window's capacity.
func (d *snapReader) fill(n int) {
	if len(d.buf)-d.pos >= n || d.eof {
		return
	}
	m := copy(d.buf[:cap(d.buf)], d.buf[d.pos:])
	d.buf, d.pos = d.buf[:m], 0
	for len(d.buf) < n && !d.eof {
		k, err := d.r.Read(d.buf[len(d.buf):cap(d.buf)])
		d.buf = d.buf[:len(d.buf)+k]
		if err == io.EOF {
			d.eof = true
		} else if err != nil {
			d.fail(err)
			d.eof = true
		}
	}
}

func (d *snapReader) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	d.fill(binary.MaxVarintLen64)
	v, n := binary.Uvarint(d.buf[d.pos:])
	if n <= 0 {
		if n == 0 {
			d.fail(io.ErrUnexpectedEOF)
		} else {
			d.fail(errors.New("varint overflows 64 bits"))
		}
		return 0
	}
	d.pos += n
	return v
}

func (d *snapReader) varint() int64 {
	u := d.uvarint()
	v := int64(u >> 1)
	if u&1 != 0 {
		v = ^v
	}
	return v
}

func (d *snapReader) byte1() byte {
	if d.err != nil {
		return 0
	}
	d.fill(1)
	if d.pos == len(d.buf) {
		d.fail(io.ErrUnexpectedEOF)
		return 0
	}
	b := d.buf[d.pos]
	d.pos++
	return b
}

// atEOF reports whether every byte of r was decoded.
func (d *snapReader) atEOF() bool {
	d.fill(1)
	return d.pos == len(d.buf)
}

// count reads a collection length; it bounds only preallocation, since a
// corrupt count runs into the end of the input.
func (d *snapReader) count() int {
	n := d.uvarint()
	if n > math.MaxInt32 {
		d.fail(fmt.Errorf("count %d too large", n))
		return 0
	}
	return int(n)
}

// capHint bounds preallocation by a count read from the input, so a
// corrupt count cannot make Restore allocate much before it fails.
func capHint(n int) int { return min(n, 1<<21) }

// raw returns the next length-prefixed bytes; they alias the window
// until the next read.
func (d *snapReader) raw() []byte {
	n := d.uvarint()
	if d.err != nil {
		return nil
	}
	if n > maxDecodeLen {
		d.fail(fmt.Errorf("length %d too large", n))
		return nil
	}
	if int(n) <= cap(d.buf) {
		d.fill(int(n))
		if len(d.buf)-d.pos < int(n) {
			d.fail(io.ErrUnexpectedEOF)
			return nil
		}
		b := d.buf[d.pos : d.pos+int(n)]
		d.pos += int(n)
		return b
	}
	b := make([]byte, n)
	m := copy(b, d.buf[d.pos:])
	d.pos = len(d.buf)
	if _, err := io.ReadFull(d.r, b[m:]); err != nil {
		d.fail(err)
		return nil
	}
	return b
}

func (d *snapReader) str() string { return string(d.raw()) }

func (d *snapReader) bytes() []byte {
	b := d.raw()
	if b == nil {
		return nil
	}
	return append([]byte(nil), b...)
}

// Restore replaces the table's state with a snapshot written by Snapshot.
// On error the table is unchanged.
func (t *Table) Restore(r io.Reader) error {
	d := &snapReader{r: r, buf: make([]byte, 0, 1<<20)}
	version := d.byte1()
	if d.err == nil && version > maxSnapFormat && version >= snapVersion {
		// A newer format still begins with its cluster version.
		need := d.uvarint()
		if d.err != nil {
			return fmt.Errorf("%w: %d", ErrBadVersion, version)
		}
		return fmt.Errorf("%w: %w", ErrBadVersion, &VersionError{What: fmt.Sprintf("snapshot format %d", version), Need: uint32(min(need, 1<<32-1))})
	}
	if d.err == nil && (version > maxSnapFormat || version < snapVersionV2) {
		return fmt.Errorf("%w: %d", ErrBadVersion, version)
	}
	d.version = version
	n := New(t.cfg)
	n.version = 1
	if version >= snapVersion {
		cv := d.uvarint()
		if d.err == nil && (cv == 0 || cv > MaxClusterVersion) {
			if cv == 0 {
				return fmt.Errorf("fsm: restore: cluster version 0")
			}
			return fmt.Errorf("%w: %w", ErrBadVersion, &VersionError{What: fmt.Sprintf("a snapshot of cluster version %d", cv), Need: uint32(min(cv, 1<<32-1))})
		}
		n.version = uint32(cv)
	}
	if err := n.restoreFrom(d); err != nil {
		return fmt.Errorf("fsm: restore: %w", err)
	}
	texts := func() [][]byte {
		var out [][]byte
		if c := d.count(); d.err == nil {
			for i := 0; i < c && d.err == nil; i++ {
				out = append(out, d.bytes())
			}
		}
		return out
	}
	loaded := texts()
	var evals [][]byte
	if version >= snapVersionV3 {
		evals = texts()
	}
	n.maxFence = n.applied
	if version >= snapVersionV3 {
		n.maxFence = d.uvarint()
	}
	if d.err == nil {
		if err := n.restoreNext(d); err != nil {
			return fmt.Errorf("fsm: restore: %w", err)
		}
	}
	if d.err != nil {
		return fmt.Errorf("fsm: restore: %w", d.err)
	}
	if !d.atEOF() {
		return fmt.Errorf("fsm: restore: trailing data")
	}
	// The scripting state stays in place (it may point back at t); only
	// its replicated script cache comes from the snapshot.
	t.now, t.applied = n.now, n.applied
	t.keys, t.queues, t.waiters, t.sessions, t.fences = n.keys, n.queues, n.waiters, n.sessions, n.fences
	t.due = n.due
	t.reqs, t.goneHoldDue, t.sessHolds, t.sessWaiters, t.tombs, t.maxFence = n.reqs, n.goneHoldDue, n.sessHolds, n.sessWaiters, n.tombs, n.maxFence
	t.nLocks, t.nHolds = n.nLocks, n.nHolds
	t.mem = n.mem
	t.version, t.halted = n.version, nil
	t.adoptNext(n)
	t.scripts.cache.restore(loaded, evals)
	return nil
}

func (n *Table) restoreFrom(d *snapReader) error {
	n.now = d.varint()
	n.applied = d.uvarint()
	var due dueQueue
	// Each part returns an error only for a snapshot it refuses; a read
	// error stays in d.err and the parts after it read nothing.
	for _, part := range []func(*snapReader, *dueQueue) error{
		n.restoreKeys, n.restoreWaiters, n.restoreQueues, n.restoreSessions,
		n.restoreFences, n.restoreRequestIDs, n.restoreTombstones,
	} {
		if err := part(d, &due); err != nil {
			return err
		}
	}
	if d.err != nil {
		return d.err
	}
	// A queue whose head fits but was not granted waits for a grant put
	// off to the next entry (pump, lostFresh): the table that wrote the
	// snapshot has it due at its time + 1, and none other is possible.
	for k, q := range n.queues {
		if n.waiterFits(q[0]) {
			due.collect(n.now+1, duePump, k)
		}
	}
	for i := range due {
		due[i].init()
	}
	n.due = due
	n.mem = n.recountMemory()
	return nil
}

// collect adds (kind, id) at time at to its heap unordered: a restore
// collects every item, then orders each heap once (init).
func (q *dueQueue) collect(at int64, kind dueKind, id string) {
	q[kind-1] = append(q[kind-1], dueItem{at: at, id: id})
}

// refuse records a snapshot the restore refuses (unless a read error came
// first) and returns the error that ends it.
func (d *snapReader) refuse(format string, args ...any) error {
	d.fail(fmt.Errorf(format, args...))
	return d.err
}

// restoreKeys reads the key space: values in strict key order, each
// lock's session bindings and due times.
func (n *Table) restoreKeys(d *snapReader, due *dueQueue) error {
	nk := d.count()
	n.keys = make(map[string]*Value, capHint(nk))
	due[dueHold-1] = make(dueHeap, 0, capHint(nk))
	prev := ""
	var kb []byte // the key being read, copied out of the window
	for i := 0; i < nk && d.err == nil; i++ {
		kb = append(kb[:0], d.raw()...)
		if i > 0 && string(kb) <= prev {
			return d.refuse("keys out of order at %q", kb)
		}
		v, k := d.value(kb)
		if d.err != nil {
			break
		}
		prev = k
		n.keys[k] = v
		if v.valueData != nil && v.Kind() != KindLock {
			v.mem = scanBody(v)
		}
		if v.Kind() == KindLock {
			n.restoreLock(v, k, due)
		} else if d := v.deadline(); d != 0 {
			due.collect(d, dueKey, k)
		}
	}
	return nil
}

// restoreLock binds the holds of lock value v at key k to their sessions
// and schedules its next lease end and its lock-delay.
func (n *Table) restoreLock(v *Value, k string, due *dueQueue) {
	l := v.lock()
	n.countLock(v, 1)
	for j := 0; j < l.numHolders(); j++ {
		if h := l.holder(j); h.session() != "" {
			n.sessAddHold(h.session(), k, h.Owner)
		}
	}
	if next := l.nextDeadline(); next != 0 {
		l.holdDue = next
		due.collect(next, dueHold, k)
	}
	if d := l.DelayUntil(); d != 0 {
		due.collect(d, dueDelay, k)
	}
}

// restoreWaiters reads the waiters and binds them to their sessions.
func (n *Table) restoreWaiters(d *snapReader, due *dueQueue) error {
	nw := d.count()
	n.waiters = make(map[string]*Waiter, capHint(nw))
	for i := 0; i < nw && d.err == nil; i++ {
		w := d.waiter()
		if d.err != nil {
			break
		}
		if w.Mode > Semaphore || len(w.Keys) == 0 || n.waiters[w.ID] != nil {
			return d.refuse("bad waiter %q", w.ID)
		}
		n.waiters[w.ID] = w
		if w.Session != "" {
			n.sessAddWaiter(w.Session, w.ID)
		}
		due.collect(w.Deadline, dueWaiter, w.ID)
	}
	return nil
}

// waiter decodes one waiter; the fields after Enqueued came with
// snapVersionV4.
func (d *snapReader) waiter() *Waiter {
	w := &Waiter{ID: d.str()}
	kc := d.count()
	for j := 0; j < kc && d.err == nil; j++ {
		w.Keys = append(w.Keys, d.str())
	}
	w.Owner = d.str()
	w.Mode = Mode(d.uvarint())
	w.Permits = int(d.varint())
	w.TTL = d.varint()
	w.Deadline = d.varint()
	w.Session = d.str()
	w.Reentrant = d.uvarint() != 0
	w.LockDelay = d.varint()
	w.MaxHold = d.varint()
	w.Enqueued = d.uvarint()
	if d.version >= snapVersionV4 {
		w.Queued = d.varint()
		w.Meta = d.meta()
	}
	return w
}

// restoreQueues reads each key's queue of waiters and checks that the
// queues hold every waiter on each of its keys, once.
func (n *Table) restoreQueues(d *snapReader, _ *dueQueue) error {
	nq := d.count()
	n.queues = make(map[string][]*Waiter, capHint(nq))
	queued := 0
	for i := 0; i < nq && d.err == nil; i++ {
		k := d.str()
		c := d.count()
		q := make([]*Waiter, 0, capHint(c))
		for j := 0; j < c && d.err == nil; j++ {
			id := d.str()
			w := n.waiters[id]
			if w == nil || !slices.Contains(w.Keys, k) || slices.Contains(q, w) {
				return d.refuse("queue %q: bad waiter %q", k, id)
			}
			q = append(q, w)
		}
		if len(q) == 0 || n.queues[k] != nil {
			return d.refuse("bad queue %q", k)
		}
		n.queues[k] = q
		queued += len(q)
	}
	total := 0
	for _, w := range n.waiters {
		total += len(w.Keys)
	}
	if d.err == nil && queued != total {
		return d.refuse("waiters and queues disagree")
	}
	return nil
}

// restoreSessions reads the sessions and checks that every hold and
// waiter bound to one names a session read.
func (n *Table) restoreSessions(d *snapReader, due *dueQueue) error {
	ns := d.count()
	n.sessions = make(map[string]*Session, capHint(ns))
	for i := 0; i < ns && d.err == nil; i++ {
		s := &Session{ID: d.str(), TTL: d.varint(), Deadline: d.varint()}
		n.sessions[s.ID] = s
		due.collect(s.Deadline, dueSession, s.ID)
	}
	for id := range n.sessHolds {
		if n.sessions[id] == nil && d.err == nil {
			return d.refuse("hold bound to unknown session %q", id)
		}
	}
	for id := range n.sessWaiters {
		if n.sessions[id] == nil && d.err == nil {
			return d.refuse("waiter bound to unknown session %q", id)
		}
	}
	return nil
}

// restoreFences reads the fence registry.
func (n *Table) restoreFences(d *snapReader, _ *dueQueue) error {
	nf := d.count()
	n.fences = make(map[string]uint64, capHint(nf))
	for i := 0; i < nf && d.err == nil; i++ {
		k := d.str()
		n.fences[k] = d.uvarint()
	}
	return nil
}

// restoreRequestIDs reads the remembered request ids, oldest first, and
// schedules the expiry of the oldest.
func (n *Table) restoreRequestIDs(d *snapReader, due *dueQueue) error {
	nr := d.count()
	x := &n.reqs
	x.init(capHint(nr))
	for i := 0; i < nr && d.err == nil; i++ {
		e := reqEntry{id: d.str(), op: Op(d.uvarint()), owner: d.str(), expires: d.varint()}
		code, flags := d.uvarint(), d.uvarint()
		e.fence = d.uvarint()
		e.deadline = d.varint()
		count := d.varint()
		if d.err != nil {
			break
		}
		if code > uint64(len(errCodes)) || flags > uint64(reqGranted|reqQueued|reqReleased) || count < 0 || count > maxHoldCount {
			return d.refuse("request id %q: bad error code %d, flags %d or count %d", e.id, code, flags, count)
		}
		e.count = int32(count)
		e.err, e.flags = uint8(code), uint8(flags)
		if len(x.fifo) > 0 && e.expires < x.fifo[len(x.fifo)-1].expires {
			return d.refuse("request id %q out of order", e.id)
		}
		before := x.len()
		if x.add(e); x.len() == before {
			return d.refuse("request id %q twice", e.id)
		}
	}
	if e := x.oldest(); e != nil {
		x.due = e.expires
		due.collect(x.due, dueReqID, "")
	}
	return nil
}

// restoreTombstones reads the recent owners of released keys (the
// lock-delay tombstones); a key with none is dropped.
func (n *Table) restoreTombstones(d *snapReader, due *dueQueue) error {
	nt := d.count()
	n.tombs = make(map[string]tombstone, capHint(nt))
	for i := 0; i < nt && d.err == nil; i++ {
		k := d.str()
		var tb tombstone
		ne := d.count()
		for j := 0; j < ne && d.err == nil; j++ {
			tb.recent = append(tb.recent, tombEntry{owner: d.str(), until: d.varint()})
		}
		if len(tb.recent) == 0 {
			continue
		}
		tb.due = tb.minUntil()
		n.tombs[k] = tb
		due.collect(tb.due, dueTombstone, k)
	}
	return nil
}

// meta decodes metadata: in strict name order, names not empty. Its
// size is not held to the table's Config: the snapshot is state the
// cluster already accepted.
func (d *snapReader) meta() Meta {
	c := d.count()
	if c == 0 || d.err != nil {
		return nil
	}
	m := make(Meta, 0, capHint(c))
	for i := 0; i < c && d.err == nil; i++ {
		e := MetaEntry{Name: d.str(), Value: d.str()}
		if d.err == nil && (e.Name == "" || (i > 0 && m[i-1].Name >= e.Name)) {
			d.fail(fmt.Errorf("bad metadata name %q", e.Name))
		}
		m = append(m, e)
	}
	return m
}

// value decodes the value stored at the key kb and returns it with the
// key as a string (for a lock, sharing one allocation with its first
// holder's owner).
func (d *snapReader) value(kb []byte) (*Value, string) {
	kind := Kind(d.byte1())
	deadline, version := d.varint(), d.uvarint()
	v := &Value{Version: version}
	if kind != KindLock {
		v.valueData = &valueData{kind: kind, expireAt: deadline}
	}
	switch kind {
	case KindString:
		v.Str = d.bytes()
	case KindHash:
		c := d.count()
		v.Hash = make(map[string][]byte, capHint(c))
		for i := 0; i < c && d.err == nil; i++ {
			f := d.str()
			v.Hash[f] = d.bytes()
		}
	case KindSet:
		c := d.count()
		v.Set = make(map[string]struct{}, capHint(c))
		for i := 0; i < c && d.err == nil; i++ {
			v.Set[d.str()] = struct{}{}
		}
	case KindZSet:
		c := d.count()
		v.ZSet = make(map[string]float64, capHint(c))
		for i := 0; i < c && d.err == nil; i++ {
			m := d.str()
			d.fill(8)
			if len(d.buf)-d.pos < 8 {
				d.fail(io.ErrUnexpectedEOF)
				break
			}
			v.ZSet[m] = math.Float64frombits(binary.LittleEndian.Uint64(d.buf[d.pos:]))
			d.pos += 8
		}
	case KindList:
		c := d.count()
		v.List = make([][]byte, 0, capHint(c))
		for i := 0; i < c && d.err == nil; i++ {
			v.List = append(v.List, d.bytes())
		}
	case KindLock:
		return v, d.lock(v.lock(), deadline, kb)
	default:
		d.fail(fmt.Errorf("unknown value kind %d", kind))
	}
	return v, string(kb)
}

// lock decodes a lock's body into l (deadline is the value's, which a
// lock never has) and returns its key kb as a string, sharing one
// allocation with the first holder's owner, as redisSetNX makes them.
func (d *snapReader) lock(l *Lock, deadline int64, kb []byte) string {
	key := ""
	permits := int(d.varint())
	fence := d.uvarint()
	delay := d.varint()
	c := d.count()
	if d.err == nil && ((c == 0 && delay == 0) || deadline != 0 || permits < 0) {
		d.fail(fmt.Errorf("bad lock (%d holders, lock-delay %d, deadline %d, permits %d)", c, delay, deadline, permits))
	}
	if permits != 0 || delay != 0 {
		*l.rareAlloc() = lockRare{permits: permits, delayUntil: delay}
	}
	for i := 0; i < c && d.err == nil; i++ {
		h := l.addHolder()
		if i == 0 {
			d.scratch = append(append(d.scratch[:0], kb...), d.raw()...)
			ko := string(d.scratch)
			key, h.Owner = ko[:len(kb)], ko[len(kb):]
		} else {
			h.Owner = d.str()
		}
		h.Mode = Mode(d.byte1())
		count := d.varint()
		h.Reentrant = d.uvarint() != 0
		h.Fence = d.uvarint()
		h.Deadline = d.varint()
		h.TTL = d.varint()
		session, lockDelay, hardLimit := d.str(), d.varint(), d.varint()
		var meta Meta
		if d.version >= snapVersionV4 {
			h.Granted, h.Extended = d.varint(), d.varint()
			meta = d.meta()
		}
		h.setOpts(session, lockDelay, hardLimit, meta)
		if h.Mode > Semaphore || count < 1 || count > maxHoldCount || h.Owner == "" || (i > 0 && l.holdIndex(h.Owner) != i) {
			d.fail(fmt.Errorf("bad hold %q", h.Owner))
		}
		h.Count = int32(count)
	}
	if d.err == nil {
		l.keepFence(fence)
	}
	if key == "" {
		key = string(kb)
	}
	return key
}
