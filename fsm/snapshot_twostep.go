package fsm

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
)

// A snapshot in two steps, for a caller that must not hold applies back
// for the whole of Snapshot (at a million keys, sorting them is most of
// its time):
//
//  1. SnapshotUnordered, with the table locked as for Snapshot, encodes
//     every key record (key, value) in map order and everything else as
//     Snapshot does, and writes where each key record starts to a
//     second writer, the index.
//  2. UnorderedSnapshot.WriteOrdered (or WriteOrderedAt), with no lock
//     and while the table goes on changing, reads that encoding and
//     index back and writes the records in key order: exactly the bytes
//     Snapshot would have written at step 1.
//
// Step 2 reads only what step 1 wrote; the table is not touched again.
// Step 1 keeps nothing per key on the heap: the index goes out as it is
// made, so neither step 1 nor the time between the steps holds memory
// in proportion to the table.

// UnorderedSnapshot describes what SnapshotUnordered wrote: the head and
// key count, the key records in map order, then the rest of the
// snapshot; and an index of Keys()+1 little-endian uint64 offsets: where
// each key record starts, then where the records end.
type UnorderedSnapshot struct {
	size     int64
	keys     int
	keyBytes int // the keys' total length
}

// SnapshotUnordered is step 1 of a two-step snapshot (above): it writes
// the table's state to w with the key records in map order, and their
// offsets to index. The caller holds the same lock as for Apply; unlike
// Snapshot, it sorts nothing but the small sections.
func (t *Table) SnapshotUnordered(w, index io.Writer) (*UnorderedSnapshot, error) {
	e := newEnc(w)
	ix := &enc{w: index, buf: make([]byte, 0, 64<<10)}
	t.encodeHead(e)
	e.uvarint(uint64(len(t.keys)))
	var batch [snapBatch]keyValue
	n, keyBytes := 0, 0
	encode := func() {
		e.touched += touch(batch[:n])
		for _, kv := range batch[:n] {
			ix.buf = binary.LittleEndian.AppendUint64(ix.buf, uint64(e.pos()))
			keyBytes += len(kv.k)
			e.str(kv.k)
			e.value(kv.v)
			e.more()
		}
		if len(ix.buf) > cap(ix.buf)-8*snapBatch {
			ix.flush()
		}
		n = 0
	}
	for k, v := range t.keys {
		batch[n] = keyValue{k: k, v: v}
		if n++; n == len(batch) {
			if encode(); e.err != nil || ix.err != nil {
				return nil, cmp.Or(e.err, ix.err)
			}
		}
	}
	encode()
	ix.buf = binary.LittleEndian.AppendUint64(ix.buf, uint64(e.pos()))
	ix.flush()
	t.encodeTail(e)
	e.flush()
	if e.err != nil || ix.err != nil {
		return nil, cmp.Or(e.err, ix.err)
	}
	return &UnorderedSnapshot{size: e.pos(), keys: len(t.keys), keyBytes: keyBytes}, nil
}

// Size is the length of the unordered encoding (and of the snapshot).
func (u *UnorderedSnapshot) Size() int64 { return u.size }

// Keys is the number of key records.
func (u *UnorderedSnapshot) Keys() int { return u.keys }

// IndexSize is the length of the index.
func (u *UnorderedSnapshot) IndexSize() int64 { return 8 * int64(u.keys+1) }

var errBadRecord = errors.New("fsm: unordered snapshot: bad key record")

// offsets decodes the index, checking that the records are in the
// encoding, one after the other.
func (u *UnorderedSnapshot) offsets(index []byte) ([]int64, error) {
	if int64(len(index)) != u.IndexSize() {
		return nil, fmt.Errorf("fsm: unordered snapshot: index of %d bytes, want %d", len(index), u.IndexSize())
	}
	recs := make([]int64, u.keys+1)
	prev := int64(1)
	for i := range recs {
		o := int64(binary.LittleEndian.Uint64(index[8*i:]))
		if o < prev || o > u.size {
			return nil, fmt.Errorf("fsm: unordered snapshot: index entry %d out of order", i)
		}
		recs[i], prev = o, o
	}
	return recs, nil
}

// WriteOrdered is step 2 of a two-step snapshot: b and index hold the
// bytes SnapshotUnordered wrote (mapped files, say); it writes the
// snapshot in Snapshot's format and order to w. It changes nothing, so a
// failed write can be retried. Its transient heap: 24 bytes per key and
// a 1 MiB buffer.
func (u *UnorderedSnapshot) WriteOrdered(w io.Writer, b, index []byte) error {
	return u.writeOrdered(w, b, index, nil, 0)
}

// WriteOrderedDropping is WriteOrdered for b and index mapped from files
// by the caller, keeping only a few MiB of them in memory at a time:
// drop(p), p a part of b or index, says those bytes are not needed for
// now, and the caller lets their pages go (madvise MADV_DONTNEED). A
// later read of them must still see the same bytes, as a file mapping
// does (it reads them back from the page cache). The bytes written are
// WriteOrdered's.
//
// Why: WriteOrdered reads the records in key order, i.e. at random over
// b, so every page of b stays resident until the end: at 1M locks a
// 57 MB mapping, on top of the heap, in every snapshot (the node's peak
// resident set, and its resident set whenever it is sampled during a
// snapshot). Here the keys are read in file order, dropping what is
// behind, and the records are written in chunks of orderChunk bytes:
// each chunk is gathered by one sweep over b in file order (again
// dropping behind) into a buffer, then written in key order.
func (u *UnorderedSnapshot) WriteOrderedDropping(w io.Writer, b, index []byte, drop func(p []byte)) error {
	return u.writeOrdered(w, b, index, drop, orderChunk)
}

// orderChunk is the bytes of records WriteOrderedDropping gathers per
// sweep over the encoding, and how far behind a sweep it drops pages:
// larger chunks mean fewer sweeps but more resident pages during Persist
// (bench/results/tuning.md#snapshot-order-chunk).
const orderChunk = 8 << 20

// writeOrdered is WriteOrdered, or with drop, WriteOrderedDropping with
// chunks of chunk bytes.
func (u *UnorderedSnapshot) writeOrdered(w io.Writer, b, index []byte, drop func([]byte), chunk int) error {
	if int64(len(b)) != u.size {
		return fmt.Errorf("fsm: unordered snapshot: %d bytes, want %d", len(b), u.size)
	}
	recs, err := u.offsets(index)
	if err != nil {
		return err
	}
	if drop != nil {
		drop(index)
	}
	rec := func(i int) []byte { return b[recs[i]:recs[i+1]] }
	// With drop, the passes in file order let go of what they passed;
	// the sort's reads (only where keys tie in their 8-byte prefix) are
	// at random and let go of nothing until it ends.
	sweep := dropBehind{b: b, drop: drop, every: int64(chunk)}
	prev := -2
	key := func(i int) []byte {
		if i == prev+1 {
			sweep.at(recs[i])
		} else {
			sweep.from = recs[i]
		}
		prev = i
		return recKey(rec(i))
	}
	for i := 0; i < u.keys; i++ {
		if key(i) == nil {
			return fmt.Errorf("%w %d", errBadRecord, i)
		}
	}
	order := keyOrder(u.keys, key)
	if drop != nil {
		drop(b)
	}
	e := newEnc(w)
	e.raw(b[:recs[0]])
	if drop == nil {
		for _, o := range order {
			e.raw(rec(o.i))
			e.more()
			if e.err != nil {
				return e.err
			}
		}
	} else if err := writeGathered(e, b, recs, order, drop, chunk); err != nil {
		return err
	}
	e.raw(b[recs[u.keys]:])
	e.flush()
	return e.err
}

// writeGathered writes the records of b in order, chunk bytes of them at
// a time: a chunk's records are copied into a buffer in file order (a
// sweep over b, dropping behind), then written from it in key order.
// Which records a sweep takes comes from each record's rank in order (4
// bytes a key), so a sweep costs a pass over that array, not a sort.
func writeGathered(e *enc, b []byte, recs []int64, order []orderEntry, drop func([]byte), chunk int) error {
	n := len(order)
	if uint64(n) > math.MaxUint32 {
		return fmt.Errorf("fsm: unordered snapshot: %d keys, too many to gather", n)
	}
	rank := make([]uint32, n)
	for r, o := range order {
		rank[o.i] = uint32(r)
	}
	var (
		buf []byte
		at  []int64 // where the record of rank lo+k starts in buf; then the end
	)
	for lo := 0; lo < n; {
		// As many records as fit in chunk bytes, at least one.
		hi, size := lo, int64(0)
		at = at[:0]
		for hi < n {
			i := order[hi].i
			l := recs[i+1] - recs[i]
			if hi > lo && size+l > int64(chunk) {
				break
			}
			at = append(at, size)
			size += l
			hi++
		}
		at = append(at, size)
		if int64(cap(buf)) < size {
			buf = make([]byte, size)
		}
		buf = buf[:size]
		sweep := dropBehind{b: b, drop: drop, every: int64(chunk), from: recs[0]}
		for i, r := range rank {
			if r < uint32(lo) || r >= uint32(hi) {
				continue
			}
			sweep.at(recs[i])
			copy(buf[at[int(r)-lo]:], b[recs[i]:recs[i+1]])
		}
		drop(b[sweep.from:])
		for k := range hi - lo {
			e.raw(buf[at[k]:at[k+1]])
			e.more()
			if e.err != nil {
				return e.err
			}
		}
		lo = hi
	}
	return nil
}

// dropBehind drops b's bytes from from up to a read at increasing
// offsets, every bytes at a time; without drop it does nothing.
type dropBehind struct {
	b     []byte
	drop  func([]byte)
	every int64
	from  int64
}

// at notes a read at off: what lies every bytes or more behind it is
// dropped.
func (d *dropBehind) at(off int64) {
	if d.drop != nil && off-d.from >= d.every {
		d.drop(d.b[d.from:off])
		d.from = off
	}
}

// WriteOrderedAt is WriteOrdered for an encoding and index read through
// r and index (where mapping them is not possible). It holds the index
// and the keys on the heap and reads each record with one ReadAt.
func (u *UnorderedSnapshot) WriteOrderedAt(w io.Writer, r, index io.ReaderAt) error {
	ib := make([]byte, u.IndexSize())
	// ReadAt may report io.EOF with every byte read, at the end.
	if n, err := index.ReadAt(ib, 0); int64(n) != u.IndexSize() {
		return fmt.Errorf("fsm: unordered snapshot: index: %w", cmp.Or(err, io.ErrUnexpectedEOF))
	}
	recs, err := u.offsets(ib)
	if err != nil {
		return err
	}
	ib = nil
	n := u.keys
	win := &atWindow{r: r, buf: make([]byte, 0, 1<<20), limit: u.size}
	arena := make([]byte, 0, u.keyBytes)
	kstart := make([]int, n+1)
	for i := 0; i < n; i++ {
		kstart[i] = len(arena)
		off, size := recs[i], recs[i+1]-recs[i]
		hdr, err := win.at(off, int(min(size, binary.MaxVarintLen64)))
		if err != nil {
			return fmt.Errorf("fsm: unordered snapshot: %w", err)
		}
		kl, h := binary.Uvarint(hdr)
		if h <= 0 || kl > uint64(size)-uint64(h) {
			return fmt.Errorf("%w %d", errBadRecord, i)
		}
		if kl > uint64(cap(win.buf)) {
			arena = slices.Grow(arena, int(kl))
			if _, err := r.ReadAt(arena[len(arena):len(arena)+int(kl)], off+int64(h)); err != nil {
				return fmt.Errorf("fsm: unordered snapshot: %w", err)
			}
			arena = arena[:len(arena)+int(kl)]
			continue
		}
		k, err := win.at(off+int64(h), int(kl))
		if err != nil {
			return fmt.Errorf("fsm: unordered snapshot: %w", err)
		}
		arena = append(arena, k...)
	}
	kstart[n] = len(arena)
	win = nil
	order := keyOrder(n, func(i int) []byte { return arena[kstart[i]:kstart[i+1]] })
	e := newEnc(w)
	if err := e.copyAt(r, 0, recs[0]); err != nil {
		return err
	}
	for _, o := range order {
		if err := e.copyAt(r, recs[o.i], recs[o.i+1]-recs[o.i]); err != nil {
			return err
		}
		e.more()
	}
	if err := e.copyAt(r, recs[n], u.size-recs[n]); err != nil {
		return err
	}
	e.flush()
	return e.err
}

// snapBatch is how many keys SnapshotUnordered touches before it
// encodes them.
const snapBatch = 64

// touch reads a byte of each key, value and first holder's owner in kvs
// and returns their sum (so the reads are not left out). The keys and
// values are scattered over the heap and visited in map order: nearly
// every one is a cache miss. Encoded one after the other, each miss
// waits for the one before; here the loads do not depend on each other,
// so the CPU has many misses in flight at once, and the encoding then
// finds them in the cache. This is most of the time SnapshotUnordered
// holds the table.
func touch(kvs []keyValue) uint64 {
	var x uint64
	for i := range kvs {
		if k := kvs[i].k; len(k) > 0 {
			x += uint64(k[0])
		}
		x += kvs[i].v.Version
	}
	for i := range kvs {
		v := kvs[i].v
		if o := v.h0.Owner; len(o) > 0 {
			x += uint64(o[0])
		}
		if v.valueData != nil {
			x += uint64(v.valueData.kind)
		}
	}
	return x
}

// recKey returns the key a key record starts with; nil if it has none.
func recKey(rec []byte) []byte {
	kl, h := binary.Uvarint(rec)
	if h <= 0 || kl > uint64(len(rec)-h) {
		return nil
	}
	return rec[h : h+int(kl)]
}

// raw appends p as it is.
func (e *enc) raw(p []byte) {
	if len(p) < encDirect {
		e.buf = append(e.buf, p...)
		return
	}
	e.flush()
	if e.err == nil {
		_, e.err = e.w.Write(p)
	}
	e.off += int64(len(p))
}

// copyAt appends the n bytes of r at off, reading them straight into
// buf; it returns a read error (the write error stays in e.err).
func (e *enc) copyAt(r io.ReaderAt, off, n int64) error {
	for n > 0 {
		if len(e.buf) == cap(e.buf) {
			e.flush()
		}
		if e.err != nil {
			return e.err
		}
		k := int(min(n, int64(cap(e.buf)-len(e.buf))))
		m, err := r.ReadAt(e.buf[len(e.buf):len(e.buf)+k], off)
		if m < k {
			if err == nil || err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return fmt.Errorf("fsm: unordered snapshot: %w", err)
		}
		e.buf = e.buf[:len(e.buf)+k]
		off, n = off+int64(k), n-int64(k)
	}
	return nil
}

// atWindow serves small reads at increasing offsets of r from one
// buffer, refilled from the offset asked for when it does not hold it.
type atWindow struct {
	r     io.ReaderAt
	buf   []byte // r's bytes from start on
	start int64
	limit int64 // r's size
}

// at returns r's n bytes at off (n <= cap(buf)), valid until the next
// call.
func (a *atWindow) at(off int64, n int) ([]byte, error) {
	if off >= a.start && off+int64(n) <= a.start+int64(len(a.buf)) {
		return a.buf[off-a.start:][:n], nil
	}
	buf := a.buf[:min(int64(cap(a.buf)), max(a.limit-off, 0))]
	m, err := a.r.ReadAt(buf, off)
	if m < n {
		if err == nil || err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	a.buf, a.start = buf[:m], off
	return a.buf[:n], nil
}

// orderEntry is one key in keyOrder's sort: p as in keyValue, i the
// key's number.
type orderEntry struct {
	p uint64
	i int
}

// keyOrder returns 0..n-1 in the order of their (distinct) keys, sorted
// as sortedValues sorts: by the 8 bytes after the prefix every key
// shares, then by the keys.
func keyOrder(n int, key func(i int) []byte) []orderEntry {
	var first []byte
	common := 0
	for i := 0; i < n; i++ {
		k := key(i)
		if i == 0 {
			first, common = k, len(k)
			continue
		}
		common = sharedPrefix(first, k, common)
	}
	es := make([]orderEntry, n)
	for i := range es {
		es[i] = orderEntry{p: prefix8(key(i), common), i: i}
	}
	slices.SortFunc(es, func(a, b orderEntry) int {
		if a.p != b.p {
			return cmp.Compare(a.p, b.p)
		}
		return bytes.Compare(key(a.i), key(b.i))
	})
	return es
}
