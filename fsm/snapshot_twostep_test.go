package fsm

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"strings"
	"testing"
	"time"
	"unsafe"
)

// tableFromBytes builds a table from data, read as a list of steps of 4
// bytes (op, key, two arguments): native locks of every mode, with
// sessions, waiters and lock-delay; Redis locks, strings (some longer
// than encDirect), hashes, sets, sorted sets and lists, with and without
// deadlines; releases, deletes and time passing. Keys share prefixes,
// end at different lengths and hold 0x00 and 0xff bytes, so the key
// order is exercised where the sort's integer prefix ties.
func tableFromBytes(data []byte) *Table {
	r := &rt{t: New(Config{MaxWaitersPerKey: 3, MaxReqIDs: 50, ReqIDWindow: 10_000}), now: 1_000_000}
	r.apply(&Command{Op: OpSessionOpen, Session: "s1", TTL: 600_000})
	suffixes := []string{"", "\x00", "\xff", "a", "ab", "abcdefgh", "abcdefgh\x00", "abcdefghi", "\xff\xff\xff\xff\xff\xff\xff\xff"}
	for ; len(data) >= 4; data = data[4:] {
		op, kb, a1, a2 := data[0], data[1], data[2], data[3]
		prefix := []string{"k/", "k/x", "lock:user:", ""}[kb>>6]
		key := prefix + suffixes[int(kb&0x3f)%len(suffixes)] + string(rune('0'+kb%7))
		owner := fmt.Sprintf("o%d", a1%5)
		ttl := int64(a2)*100 + 1
		switch op % 16 {
		case 0, 1:
			r.apply(&Command{Op: OpAcquire, Key: key, Owner: owner, TTL: ttl, Mode: Mode(a1 % 3), Permits: 3,
				Reentrant: a2&1 != 0, ReqID: fmt.Sprintf("r%d", a2)})
		case 2:
			r.apply(&Command{Op: OpAcquire, Key: key, Owner: owner, TTL: ttl, Wait: 60_000, Session: "s1"})
		case 3:
			r.apply(&Command{Op: OpAcquire, Key: key, Owner: owner, TTL: 10, LockDelay: int64(a2) * 50})
		case 4:
			r.apply(&Command{Op: OpRelease, Key: key, Owner: owner})
		case 5:
			r.do("SET", key, owner, "NX", "PX", fmt.Sprint(ttl))
		case 6:
			if a2 < 8 {
				r.do("SET", key, strings.Repeat(owner, 40_000)) // 80 KB: beyond encDirect
			} else {
				r.do("SET", key, owner)
			}
		case 7:
			r.do("HSET", key, owner, key, fmt.Sprint(a2), owner)
		case 8:
			r.do("SADD", key, owner, fmt.Sprint(a2))
		case 9:
			r.do("ZADD", key, fmt.Sprint(int(a2)-128), owner)
		case 10:
			r.do("RPUSH", key, owner, key)
		case 11:
			r.do("PEXPIRE", key, fmt.Sprint(ttl))
		case 12:
			r.do("DEL", key)
		case 13:
			r.eval(`if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`, 1, key, owner)
		case 14:
			r.apply(&Command{Op: OpFenceCheck, Key: key, Token: uint64(a2), ReqID: fmt.Sprintf("f%d", a1)})
		case 15:
			r.now += int64(a2) * 10
			r.apply(&Command{Op: OpTick})
		}
	}
	return r.t
}

// twoStep snapshots t in two steps, step 2 both from bytes and through
// ReaderAt, and checks both against Snapshot.
func twoStep(t *Table) error {
	var want bytes.Buffer
	if err := t.Snapshot(&want); err != nil {
		return err
	}
	var unordered, index bytes.Buffer
	u, err := t.SnapshotUnordered(&unordered, &index)
	if err != nil {
		return err
	}
	if int64(index.Len()) != u.IndexSize() {
		return fmt.Errorf("index of %d bytes, IndexSize %d", index.Len(), u.IndexSize())
	}
	if u.Size() != int64(unordered.Len()) || u.Size() != int64(want.Len()) {
		return fmt.Errorf("sizes: Size %d, wrote %d, Snapshot %d", u.Size(), unordered.Len(), want.Len())
	}
	if u.Keys() != len(t.keys) {
		return fmt.Errorf("%d key records, table has %d keys", u.Keys(), len(t.keys))
	}
	var fromBytes, fromAt bytes.Buffer
	if err := u.WriteOrdered(&fromBytes, unordered.Bytes(), index.Bytes()); err != nil {
		return fmt.Errorf("WriteOrdered: %v", err)
	}
	if err := u.WriteOrderedAt(&fromAt, bytes.NewReader(unordered.Bytes()), bytes.NewReader(index.Bytes())); err != nil {
		return fmt.Errorf("WriteOrderedAt: %v", err)
	}
	if !bytes.Equal(fromBytes.Bytes(), want.Bytes()) {
		return fmt.Errorf("WriteOrdered: %d bytes differ from Snapshot's %d", fromBytes.Len(), want.Len())
	}
	// Dropping: chunks of one record (every record its own sweep), of
	// a few records, and the real size.
	for _, chunk := range []int{1, 200, orderChunk} {
		var got bytes.Buffer
		d := dropCheck{b: unordered.Bytes(), index: index.Bytes()}
		if err := u.writeOrdered(&got, unordered.Bytes(), index.Bytes(), d.drop, chunk); err != nil {
			return fmt.Errorf("WriteOrderedDropping, chunk %d: %v", chunk, err)
		}
		if d.err != nil {
			return fmt.Errorf("WriteOrderedDropping, chunk %d: %v", chunk, d.err)
		}
		if !bytes.Equal(got.Bytes(), want.Bytes()) {
			return fmt.Errorf("WriteOrderedDropping, chunk %d: %d bytes differ from Snapshot's %d", chunk, got.Len(), want.Len())
		}
		if d.whole != 1 || d.indexDrops != 1 {
			return fmt.Errorf("WriteOrderedDropping, chunk %d: dropped all of b %d times and the index %d times, want once each", chunk, d.whole, d.indexDrops)
		}
	}
	if !bytes.Equal(fromAt.Bytes(), want.Bytes()) {
		return fmt.Errorf("WriteOrderedAt: %d bytes differ from Snapshot's %d", fromAt.Len(), want.Len())
	}
	return nil
}

// The two steps write exactly Snapshot's bytes, for random tables, the
// golden table and an empty one.
func TestSnapshotTwoStepMatchesSnapshot(t *testing.T) {
	if err := twoStep(goldenTable(t)); err != nil {
		t.Fatalf("golden table: %v", err)
	}
	if err := twoStep(New(DefaultConfig())); err != nil {
		t.Fatalf("empty table: %v", err)
	}
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	for i := 0; i < 40; i++ {
		data := make([]byte, 4*(1+rng.Intn(600)))
		rng.Read(data)
		tab := tableFromBytes(data)
		if err := twoStep(tab); err != nil {
			t.Fatalf("seed %d, table %d (%d keys): %v", seed, i, len(tab.keys), err)
		}
	}
}

// Step 2 at the scale where keys share long prefixes and the 8-byte
// integer prefix ties: many keys, one shared prefix, then keys that
// differ only after the 8 bytes.
func TestSnapshotTwoStepManyKeys(t *testing.T) {
	r := &rt{tb: t, t: New(DefaultConfig()), now: 1_000_000}
	for i := 0; i < 3000; i++ {
		key := fmt.Sprintf("bench/held/%07d", i)
		if i%3 == 0 {
			key = fmt.Sprintf("bench/held/same8bytes%d", i)
		}
		if res := r.apply(&Command{Op: OpAcquire, Key: key, Owner: "o", TTL: 60_000}); res.Err != nil {
			t.Fatal(res.Err)
		}
	}
	if err := twoStep(r.t); err != nil {
		t.Fatal(err)
	}
}

type failWriter struct{ left int }

var errDiskFull = errors.New("disk full")

func (w *failWriter) Write(p []byte) (int, error) {
	if len(p) > w.left {
		n := w.left
		w.left = 0
		return n, errDiskFull
	}
	w.left -= len(p)
	return len(p), nil
}

// Write errors come back from either step; a step 2 that failed can be
// run again from the same UnorderedSnapshot; a step 2 given bytes that
// are not what step 1 wrote fails without panicking.
func TestSnapshotTwoStepErrors(t *testing.T) {
	r := &rt{tb: t, t: New(DefaultConfig()), now: 1_000_000}
	for i := 0; i < 4000; i++ {
		r.do("SET", fmt.Sprintf("k%05d", i), strings.Repeat("v", 1000))
	}
	tab := r.t
	var want, unordered, index bytes.Buffer
	if err := tab.Snapshot(&want); err != nil {
		t.Fatal(err)
	}
	if want.Len() < 3*encChunk {
		t.Fatalf("table encodes to %d bytes: too small to fail in the middle", want.Len())
	}
	if _, err := tab.SnapshotUnordered(&failWriter{left: encChunk + 10}, io.Discard); !errors.Is(err, errDiskFull) {
		t.Fatalf("step 1 into a failing writer: %v", err)
	}
	if _, err := tab.SnapshotUnordered(io.Discard, &failWriter{left: 100}); !errors.Is(err, errDiskFull) {
		t.Fatalf("step 1 into a failing index writer: %v", err)
	}
	u, err := tab.SnapshotUnordered(&unordered, &index)
	if err != nil {
		t.Fatal(err)
	}
	b, ix := unordered.Bytes(), index.Bytes()
	if err := u.WriteOrdered(&failWriter{left: 2*encChunk + 10}, b, ix); !errors.Is(err, errDiskFull) {
		t.Fatalf("WriteOrdered into a failing writer: %v", err)
	}
	if err := u.WriteOrderedAt(&failWriter{left: 100}, bytes.NewReader(b), bytes.NewReader(ix)); !errors.Is(err, errDiskFull) {
		t.Fatalf("WriteOrderedAt into a failing writer: %v", err)
	}
	var again bytes.Buffer
	if err := u.WriteOrdered(&again, b, ix); err != nil || !bytes.Equal(again.Bytes(), want.Bytes()) {
		t.Fatalf("WriteOrdered after a failure: %v", err)
	}

	rec1 := binary.LittleEndian.Uint64(ix[8:])
	for _, c := range []struct {
		name  string
		b, ix []byte
	}{
		{"short", b[:len(b)-1], ix},
		{"truncated", b[:binary.LittleEndian.Uint64(ix[8*(u.Keys()/2):])], ix},
		{"short index", b, ix[:len(ix)-8]},
		// A record's key length pointing past the record.
		{"key length", func() []byte {
			c := bytes.Clone(b)
			copy(c[rec1:], []byte{0xff, 0xff, 0x7f})
			return c
		}(), ix},
		{"index out of order", b, func() []byte {
			c := bytes.Clone(ix)
			binary.LittleEndian.PutUint64(c[8:], 1<<40)
			return c
		}()},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out bytes.Buffer
			if err := u.WriteOrderedAt(&out, bytes.NewReader(c.b), bytes.NewReader(c.ix)); err == nil {
				t.Error("WriteOrderedAt succeeded")
			}
			if err := u.WriteOrdered(&out, c.b, c.ix); err == nil {
				t.Error("WriteOrdered succeeded")
			}
		})
	}
}

func FuzzSnapshotTwoStep(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 5, 0x41, 1, 9, 6, 0x82, 3, 4, 7, 0xc3, 1, 1})
	f.Add([]byte{2, 5, 1, 200, 2, 5, 2, 200, 3, 6, 1, 9, 15, 0, 0, 2, 8, 0x45, 3, 3, 9, 0x46, 1, 250})
	f.Add([]byte{6, 0x40, 1, 1, 6, 0x41, 2, 200, 10, 0x42, 3, 4, 11, 0x42, 3, 4, 12, 0x40, 1, 1, 14, 3, 3, 3})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 4*500 {
			data = data[:4*500]
		}
		if err := twoStep(tableFromBytes(data)); err != nil {
			t.Fatal(err)
		}
	})
}

// dropCheck checks WriteOrderedDropping's drop calls: each names a part
// of b or all of the index.
type dropCheck struct {
	b, index          []byte
	whole, indexDrops int
	err               error
}

func (d *dropCheck) drop(p []byte) {
	switch {
	case len(p) == len(d.index) && unsafe.SliceData(p) == unsafe.SliceData(d.index):
		d.indexDrops++
	case len(p) == len(d.b) && unsafe.SliceData(p) == unsafe.SliceData(d.b):
		d.whole++
	case !within(p, d.b) && d.err == nil:
		d.err = fmt.Errorf("drop of %d bytes outside the encoding", len(p))
	}
}

// within reports whether p is a part of b (an empty p anywhere in it).
func within(p, b []byte) bool {
	if len(b) == 0 {
		return len(p) == 0
	}
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	hi := lo + uintptr(len(b))
	at := uintptr(unsafe.Pointer(unsafe.SliceData(p)))
	return at >= lo && at+uintptr(len(p)) <= hi
}
