package cluster

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/locknode/locknode/fsm"
)

// Snapshots, and why they are built the way they are.
//
// hashicorp/raft calls FSM.Snapshot on the FSM goroutine (no Apply runs
// meanwhile) and then FSMSnapshot.Persist on another goroutine while
// later entries are applied; what Persist writes must be the state at
// the Snapshot call, or a restore would replay entries the snapshot
// already holds. fsm.Table has no cheap immutable view (it is a set of
// maps mutated in place), so the point-in-time copy is the encoded table
// itself, made under the node's read lock in Snapshot.
//
// That encoding used to go into a bytes.Buffer: 60 MB for 1M locks, and
// up to twice that while the buffer grew by doubling, on top of the
// table. It now goes into an unlinked temporary file in DataDir (page
// cache, not heap: the transient heap cost is the encoder's 1 MiB
// buffer), and Persist copies the file into raft's sink with no lock
// held. The file is removed from the directory as soon as it is created,
// so a crash leaves nothing behind; its pages are usually dropped before
// writeback, since it lives for seconds.
//
// The alternative — hold the read lock from Snapshot until Persist ends
// and encode straight into the sink — saves the extra copy but is worse
// here: (1) the lock would be held across raft's hand-off between the
// two calls, in which raft's main loop must answer a configuration
// request; if the FSM goroutine is then blocked on our lock and raft's
// 128-deep apply channel fills, raft deadlocks; (2) ApplyBatch waiting
// for the write lock blocks every new reader (sync.RWMutex), so reads
// would stall too, where today only applies do; (3) the stall would grow
// by the sink's CRC and write time. The stall that remains is the
// encoding itself (fsm.Table.Snapshot: sorting and writing every key),
// the same as before; shrinking it needs a copy-on-write table in fsm.
//
// Measured with TestSnapshotCost at 1M locks (54 MB encoded), 2 cores at
// load 5-16: transient heap +136-160 MB with the buffer, +24-32 MB now
// (fsm's own sort slice); applies paused 0.75-1.56 s (median 0.99 s)
// with the buffer, 0.69-1.35 s (median 1.13 s) now, i.e. unchanged
// within the noise; Persist's copy takes 7-13 ms. Profile of the pause:
// ~70 % collecting and sorting the keys, ~25 % encoding, ~4 % the file.

// fileSnapshot is a point-in-time encoded table in an unlinked file, key
// records in map order (fsm.Table.SnapshotUnordered); Persist puts them
// in order on the way to the sink.
type fileSnapshot struct {
	f     *os.File
	name  string // still to remove on Release when unlinking early failed
	order *fsm.UnorderedSnapshot

	// freeMemory: return free heap to the OS once persisted
	// (Config.FreeMemoryAfterSnapshot).
	freeMemory bool
	log        hclog.Logger
	mapFile    func(f *os.File, size int64) (b []byte, unmap func() error, err error) // mapFile; tests fail it

	mu       sync.Mutex
	released bool
}

var _ raft.FSMSnapshot = (*fileSnapshot)(nil)

// newFileSnapshot creates the unlinked file in dir; it needs no lock,
// so the caller makes it before locking the table.
func newFileSnapshot(dir string) (*fileSnapshot, error) {
	f, err := os.CreateTemp(dir, ".fsm-snapshot-*.tmp")
	if err != nil {
		return nil, err
	}
	s := &fileSnapshot{f: f, log: hclog.NewNullLogger(), mapFile: mapFile}
	if err := os.Remove(f.Name()); err != nil {
		// Not on every OS can an open file be unlinked; Release
		// removes it then.
		s.name = f.Name()
	}
	return s, nil
}

// encode writes the table into the file with encode (the table locked:
// this is the part applies wait for). On error the snapshot is released.
func (s *fileSnapshot) encode(encode func(io.Writer) (*fsm.UnorderedSnapshot, error)) error {
	order, err := encode(s.f)
	if err != nil {
		s.Release()
		return err
	}
	s.order = order
	return nil
}

// Persist writes the snapshot into sink in key order, from the file
// mapped read-only (or, where it cannot be mapped, through ReadAt); it
// reads only the file, so applies go on meanwhile. Nothing in s changes,
// so a failed Persist can be retried on the same snapshot.
func (s *fileSnapshot) Persist(sink raft.SnapshotSink) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.released {
		_ = sink.Cancel()
		return errors.New("cluster: snapshot already released")
	}
	start := time.Now()
	mapped := true
	err := s.writeMapped(sink)
	if errors.Is(err, errNotMapped) {
		mapped = false
		err = s.order.WriteOrderedAt(sink, s.f)
	}
	if err != nil {
		_ = sink.Cancel()
		return fmt.Errorf("cluster: persist snapshot: %w", err)
	}
	s.log.Debug("snapshot ordered", "bytes", s.order.Size(), "keys", s.order.Keys(), "mapped", mapped, "took", time.Since(start))
	if s.freeMemory {
		// On raft's snapshot goroutine, so no apply waits for it; before
		// the sink is closed, so a snapshot reported done has given its
		// memory back.
		debug.FreeOSMemory()
	}
	return sink.Close()
}

// errNotMapped: the file could not be mapped; nothing was written.
var errNotMapped = errors.New("cluster: snapshot file not mapped")

// writeMapped writes the ordered snapshot into w from the mapped file.
// The mapping's pages are the page cache's: they count in the process's
// resident set only until the unmap at the end.
func (s *fileSnapshot) writeMapped(w io.Writer) error {
	b, unmap, err := s.mapFile(s.f, s.order.Size())
	if err != nil {
		return fmt.Errorf("%w: %v", errNotMapped, err)
	}
	err = s.order.WriteOrdered(w, b)
	if uerr := unmap(); err == nil && uerr != nil {
		err = fmt.Errorf("unmap: %w", uerr)
	}
	return err
}

// Release closes (and so frees) the file. Raft always calls it, also
// when it never calls Persist.
func (s *fileSnapshot) Release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.released {
		return
	}
	s.released = true
	s.order = nil
	_ = s.f.Close()
	if s.name != "" {
		_ = os.Remove(s.name)
	}
}

// Restores and the garbage collector: not paused, on measurement.
//
// A restore builds the whole table at once and nearly everything it
// allocates stays live (1M locks: 184 MB allocated, 183 MB live after),
// so collecting while it runs only re-marks a growing heap. Switching
// collection off for the restore (debug.SetGCPercent(-1)) was tried:
// in-process (TestSnapshotCost) the restore's CPU fell from 0.63-0.94 s
// to 0.53-0.61 s, but the full collection it defers costs 0.25-0.55 s
// right after, and restarting three `locknode serve` processes from
// 1M-lock data dirs (13-14 alternating runs each, load 5-12) gave the same
// restart-to-serving median (4.4 s both) and the same CPU to serving.
// With no gain it is not worth a process-wide setting that an embedding
// application would see change under it.
