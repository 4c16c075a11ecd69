package cluster

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/hashicorp/raft-wal/metadb"
	"github.com/hashicorp/raft-wal/segment"
	"github.com/hashicorp/raft-wal/types"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/fsm"
)

// logBuffer is an hclog sink tests read (safe for concurrent writes).
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func bufLogger(b *logBuffer) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Level: hclog.Info, Output: b})
}

// smallSegments makes wal segments rotate every few entries.
func smallSegments(t *testing.T) {
	old := walSegmentSize
	walSegmentSize = 16 << 10
	t.Cleanup(func() { walSegmentSize = old })
}

// storeEntries appends entries from..to (inclusive), one batch each,
// with 200-byte payloads.
func storeEntries(t *testing.T, logs raft.LogStore, from, to uint64) {
	t.Helper()
	for i := from; i <= to; i++ {
		if err := logs.StoreLogs([]*raft.Log{{Index: i, Term: 1, Type: raft.LogCommand, Data: bytes.Repeat([]byte{byte(i)}, 200)}}); err != nil {
			t.Fatalf("store %d: %v", i, err)
		}
	}
}

// segmentFiles returns the wal's segment files in order.
func segmentFiles(t *testing.T, dataDir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dataDir, walDir, "*.wal"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no segments: %v", err)
	}
	slices.Sort(files)
	return files
}

// writtenEnd returns the offset after the last non-zero byte of path.
func writtenEnd(t *testing.T, path string) int64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	end := len(b)
	for end > 0 && b[end-1] == 0 {
		end--
	}
	return int64(end)
}

// overwrite writes n random bytes into path at off.
func overwrite(t *testing.T, path string, off int64, n int) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	junk := make([]byte, n)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range junk {
		junk[i] = byte(r.IntN(255) + 1)
	}
	if _, err := f.WriteAt(junk, off); err != nil {
		t.Fatal(err)
	}
}

// 3000 bytes overwritten near the end of the last segment: the node
// opens shorter, and says so at ERROR with the range it cut.
func TestWALCorruptTailIsReported(t *testing.T) {
	dir := t.TempDir()
	s, err := openRaftStorage(nil, dir, LogStoreWAL, nil, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	storeEntries(t, s.logs, 1, 100)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	files := segmentFiles(t, dir)
	last := files[len(files)-1]
	end := writtenEnd(t, last)
	overwrite(t, last, end-4000, 3000)

	var logs logBuffer
	s, err = openRaftStorage(nil, dir, LogStoreWAL, nil, bufLogger(&logs))
	if err != nil {
		t.Fatalf("open after a corrupt tail: %v", err)
	}
	defer s.Close()
	got, _ := s.logs.LastIndex()
	if got >= 100 {
		t.Fatalf("last index %d after overwriting the tail; the test did not damage it", got)
	}
	out := logs.String()
	m := regexp.MustCompile(`\[ERROR\] corrupt raft log tail.*cut_from=(\d+) cut_to=(\d+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no ERROR naming the corrupt tail and its range; log:\n%s", out)
	}
	if from, _ := strconv.ParseUint(m[1], 10, 64); from != got+1 {
		t.Errorf("cut_from=%s, want %d (the WAL's last index + 1)", m[1], got+1)
	}
	if m[2] != "100" {
		t.Errorf("cut_to=%s, want 100 (the last entry the segment held)", m[2])
	}
}

// A segment before the tail damaged: the node refuses to start and says
// how to recover.
func TestWALCorruptMiddleSegmentRefusesStart(t *testing.T) {
	smallSegments(t)
	dir := t.TempDir()
	s, err := openRaftStorage(nil, dir, LogStoreWAL, nil, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	storeEntries(t, s.logs, 1, 300)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	files := segmentFiles(t, dir)
	if len(files) < 3 {
		t.Fatalf("%d segments; want at least 3", len(files))
	}
	overwrite(t, files[1], writtenEnd(t, files[1])/2, 3000)

	_, err = openRaftStorage(nil, dir, LogStoreWAL, nil, hclog.NewNullLogger())
	if !errors.Is(err, ErrCorruptLog) {
		t.Fatalf("open = %v, want ErrCorruptLog", err)
	}
	for _, want := range []string{filepath.Base(files[1]), "remove its data directory", "rejoin", "snapshot restore"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	// Start refuses too (the same check, through NewNode).
	cfg := DefaultConfig()
	cfg.ID, cfg.DataDir, cfg.Bootstrap = "n1", dir, true
	if n, err := Start(t.Context(), cfg); !errors.Is(err, ErrCorruptLog) {
		if n != nil {
			n.Kill()
		}
		t.Fatalf("Start = %v, want ErrCorruptLog", err)
	}
}

// A segment rotation that fails (no room for the new segment) leaves
// the wal refusing appends only until a segment can be created again.
func TestWALHealsAfterFailedRotation(t *testing.T) {
	smallSegments(t)
	var full atomic.Bool
	faults := func(op StorageOp, _ int) (int, error) {
		if full.Load() && op == StorageCreate {
			return 0, syscall.ENOSPC
		}
		return 0, nil
	}
	dir := t.TempDir()
	s, err := openRaftStorage(nil, dir, LogStoreWAL, faults, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	storeEntries(t, s.logs, 1, 10)
	full.Store(true)
	var failedAt uint64
	for i := uint64(11); i < 400 && failedAt == 0; i++ {
		if err := s.logs.StoreLogs([]*raft.Log{{Index: i, Term: 1, Data: make([]byte, 200)}}); err != nil {
			failedAt = i
		}
	}
	if failedAt == 0 {
		t.Fatal("no append failed with segment creation failing")
	}
	// Still full: appends keep failing, reads work.
	if err := s.logs.StoreLogs([]*raft.Log{{Index: failedAt, Term: 1}}); err == nil {
		t.Fatal("append succeeded while no segment can be created")
	}
	var l raft.Log
	if err := s.logs.GetLog(failedAt-1, &l); err != nil {
		t.Fatalf("read while full: %v", err)
	}
	// Space freed: the next append succeeds, and the log reopens whole.
	full.Store(false)
	storeEntries(t, s.logs, failedAt, failedAt+50)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = openRaftStorage(nil, dir, LogStoreWAL, nil, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	if last, _ := s.logs.LastIndex(); last != failedAt+50 {
		t.Fatalf("last index after reopen %d, want %d", last, failedAt+50)
	}
	for i := uint64(1); i <= failedAt+50; i++ {
		if err := s.logs.GetLog(i, &l); err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
	}
}

// A follower whose disk is full (every log write fails with ENOSPC)
// falls behind while the other two commit; once space is back it
// catches up from where it stopped, without a restart, a snapshot, or
// losing an acknowledged operation; the leader retries from where the
// follower stopped instead of walking back one entry per failed write
// (upstream raft), a walk that ends in a snapshot the full disk cannot
// take either.
func TestFollowerHealsAfterDiskFull(t *testing.T) {
	var full atomic.Bool
	var victimID atomic.Value
	victimID.Store("")
	var logs logBuffer
	tc := newTestCluster(t, 3, func(c *Config) {
		id := c.ID
		c.StorageFaults = func(op StorageOp, _ int) (int, error) {
			if full.Load() && victimID.Load() == id && op != StorageCreate {
				return 0, syscall.ENOSPC
			}
			return 0, nil
		}
		c.Logger = hclog.New(&hclog.LoggerOptions{Name: id, Level: hclog.Warn, Output: &logs})
	})
	ctx := ctxT(t, 60*time.Second)
	l := tc.leader(10 * time.Second)
	victim := tc.follower()
	victimID.Store(victim.ID())
	fences := map[string]uint64{}
	acquire := func(from, to int) {
		t.Helper()
		for i := from; i < to; i++ {
			key := fmt.Sprintf("k%d", i)
			g, err := l.TryAcquire(ctx, api.AcquireRequest{Key: key, Owner: "o", TTLMs: 600000})
			if err != nil {
				t.Fatal(err)
			}
			fences[key] = g.Fence
		}
	}
	acquire(0, 20)
	tc.eventually(10*time.Second, "the follower applied", func() bool { return victim.AppliedIndex() >= l.AppliedIndex() })
	full.Store(true)
	stuck := victim.AppliedIndex()
	acquire(20, 100)
	const failures = 8
	tc.eventually(20*time.Second, "the leader retried the full follower", func() bool {
		return strings.Count(logs.String(), "failed to append to logs") >= failures
	})
	if got := victim.AppliedIndex(); got > stuck+1 {
		t.Fatalf("the full follower applied %d entries past %d", got-stuck, stuck)
	}
	full.Store(false)
	want := l.AppliedIndex()
	tc.eventually(30*time.Second, "the follower caught up", func() bool { return victim.AppliedIndex() >= want })
	if s := victim.Raft().Stats()["last_snapshot_index"]; s != "0" {
		t.Errorf("the follower installed a snapshot (last_snapshot_index %s); it had every entry before its disk filled", s)
	}
	// The leader retried from where the follower stopped: its next
	// index for it did not move back with each failed write.
	nexts := map[string]bool{}
	for _, m := range regexp.MustCompile(`appendEntries rejected, sending older logs: peer=.* next=(\d+)`).FindAllStringSubmatch(logs.String(), -1) {
		nexts[m[1]] = true
	}
	if len(nexts) > 2 {
		t.Errorf("the leader moved its next index for the full follower %d times: %v", len(nexts), nexts)
	}
	for key, fence := range fences {
		info, err := victim.Inspect(ctx, key, api.ReadOptions{Stale: true})
		if err != nil || len(info.Holders) != 1 || info.Holders[0].Fence != fence || info.Holders[0].Owner != "o" {
			t.Fatalf("%s on the healed follower: %+v, %v; want owner o fence %d", key, info, err, fence)
		}
	}
}

// A write torn by a crash (half a batch on disk, never acknowledged) is
// cut and reported as torn; a batch that failed its fsync and was then
// written again shorter leaves stale bytes past the end that are not
// reported at all.
func TestWALTornTail(t *testing.T) {
	var mode atomic.Int32 // 1: tear the next write; 2: fail the next fsync
	faults := func(op StorageOp, size int) (int, error) {
		switch {
		case op == StorageWrite && mode.Load() == 1:
			mode.Store(0)
			return size / 2, syscall.EIO
		case op == StorageSync && mode.Load() == 2:
			mode.Store(0)
			return 0, syscall.EIO
		}
		return 0, nil
	}
	big := func(i uint64) []*raft.Log {
		var b []*raft.Log
		for j := range uint64(8) {
			b = append(b, &raft.Log{Index: i + j, Term: 1, Data: bytes.Repeat([]byte{1}, 300)})
		}
		return b
	}

	t.Run("torn", func(t *testing.T) {
		dir := t.TempDir()
		s, err := openRaftStorage(nil, dir, LogStoreWAL, faults, hclog.NewNullLogger())
		if err != nil {
			t.Fatal(err)
		}
		storeEntries(t, s.logs, 1, 20)
		mode.Store(1)
		if err := s.logs.StoreLogs(big(21)); err == nil {
			t.Fatal("a torn write succeeded")
		}
		_ = s.Close() // the crash: what is on disk stays
		var logs logBuffer
		s, err = openRaftStorage(nil, dir, LogStoreWAL, nil, bufLogger(&logs))
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if last, _ := s.logs.LastIndex(); last != 20 {
			t.Fatalf("last index %d, want 20", last)
		}
		if !regexp.MustCompile(`\[ERROR\] torn raft log tail.*cut_from=21 cut_to=2[1-8] `).MatchString(logs.String()) {
			t.Fatalf("no ERROR naming the torn tail and its range; log:\n%s", logs.String())
		}
	})

	t.Run("rewritten", func(t *testing.T) {
		dir := t.TempDir()
		s, err := openRaftStorage(nil, dir, LogStoreWAL, faults, hclog.NewNullLogger())
		if err != nil {
			t.Fatal(err)
		}
		storeEntries(t, s.logs, 1, 20)
		mode.Store(2)
		if err := s.logs.StoreLogs(big(21)); err == nil {
			t.Fatal("a write whose fsync failed succeeded")
		}
		storeEntries(t, s.logs, 21, 22) // shorter: the failed batch's end stays on disk
		_ = s.Close()
		var logs logBuffer
		s, err = openRaftStorage(nil, dir, LogStoreWAL, nil, bufLogger(&logs))
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if last, _ := s.logs.LastIndex(); last != 22 {
			t.Fatalf("last index %d, want 22", last)
		}
		if strings.Contains(logs.String(), "[ERROR]") {
			t.Fatalf("an ERROR for the bytes a failed batch left past the end:\n%s", logs.String())
		}
	})
}

// The reported case on a real full disk (a small tmpfs): a follower far
// behind is sent a snapshot it has no room for. The failed installs
// leave no partial snapshot behind; once space is freed the follower
// installs it and catches up, without a restart.
func TestFollowerInstallsSnapshotOnceSpaceIsFreed(t *testing.T) {
	smallSegments(t)
	disk := smallDisk(t, "24m")
	var logs logBuffer
	tc := newTestCluster(t, 3, func(c *Config) {
		c.TrailingLogs = 2
		if c.ID == "n3" {
			c.DataDir = filepath.Join(disk, "n3")
			c.Logger = hclog.New(&hclog.LoggerOptions{Name: c.ID, Level: hclog.Warn, Output: &logs})
		}
	})
	ctx := ctxT(t, 90*time.Second)
	l := tc.leader(10 * time.Second)
	victim := 2
	if tc.nodes[victim] == l {
		// Move leadership off n3, the node with the small disk.
		if err := l.Raft().LeadershipTransfer().Error(); err != nil {
			t.Fatal(err)
		}
		l = tc.leader(10 * time.Second)
	}
	tc.kill(victim)
	// About 4 MiB of state: 400 keys of 10 KiB values.
	value := strings.Repeat("v", 10<<10)
	for i := range 400 {
		cmd := &fsm.Command{Op: fsm.OpRedis, Args: [][]byte{[]byte("SET"), fmt.Appendf(nil, "big%d", i), []byte(value)}}
		for {
			_, err := l.Apply(ctx, cmd)
			if err == nil {
				break
			}
			// Two nodes on a loaded machine may change leaders; the SET
			// is idempotent, so it goes again through the new leader.
			if !errors.Is(err, api.ErrNoLeader) || ctx.Err() != nil {
				t.Fatal(err)
			}
			l = tc.leader(10 * time.Second)
		}
	}
	for _, nd := range tc.nodes {
		if nd != nil {
			tc.eventually(10*time.Second, "applied", func() bool { return nd.AppliedIndex() >= l.AppliedIndex() })
			if err := nd.Raft().Snapshot().Error(); err != nil {
				t.Fatalf("snapshot on %s: %v", nd.ID(), err)
			}
		}
	}
	// Fill the small disk, leaving room for the log but not the snapshot.
	free, _, err := diskSpace(disk)
	if err != nil {
		t.Fatal(err)
	}
	filler := filepath.Join(disk, "filler")
	if err := os.WriteFile(filler, make([]byte, free-1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	n := tc.restart(victim)
	defer func() {
		if t.Failed() {
			t.Logf("n3 log:\n%s", logs.String())
		}
	}()
	tc.eventually(30*time.Second, "a failed install", func() bool {
		return strings.Count(logs.String(), "removed a partial snapshot") >= 2
	})
	if p := partials(t, tc.cfgs[victim].DataDir); len(p) > 1 {
		t.Fatalf("partial snapshots pile up: %v", p)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	want := l.AppliedIndex()
	tc.eventually(60*time.Second, "the follower caught up", func() bool { return n.AppliedIndex() >= want })
	if s := n.Raft().Stats()["last_snapshot_index"]; s == "0" {
		t.Fatalf("caught up without a snapshot")
	}
	for i := range 400 {
		info, err := n.Inspect(ctx, fmt.Sprintf("big%d", i), api.ReadOptions{Stale: true})
		if err != nil || info.Kind != "string" {
			t.Fatalf("big%d on the follower: %+v, %v", i, info, err)
		}
	}
	if p := partials(t, tc.cfgs[victim].DataDir); len(p) != 0 {
		t.Fatalf("partial snapshots left: %v", p)
	}
}

// A leader whose disk fills steps down; another node leads and the
// cluster serves; once space is back the old leader catches up.
func TestLeaderStepsDownOnDiskFull(t *testing.T) {
	var fullID atomic.Value
	fullID.Store("")
	tc := newTestCluster(t, 3, func(c *Config) {
		id := c.ID
		c.StorageFaults = func(StorageOp, int) (int, error) {
			if fullID.Load() == id {
				return 0, syscall.ENOSPC
			}
			return 0, nil
		}
	})
	ctx := ctxT(t, 60*time.Second)
	old := tc.leader(10 * time.Second)
	if _, err := old.TryAcquire(ctx, api.AcquireRequest{Key: "before", Owner: "o", TTLMs: 600000}); err != nil {
		t.Fatal(err)
	}
	fullID.Store(old.ID())
	// The write that meets the full disk fails (its outcome unknown to
	// the client); the leader steps down.
	_, _ = old.TryAcquire(ctx, api.AcquireRequest{Key: "during", Owner: "o", TTLMs: 600000})
	tc.eventually(20*time.Second, "another leader", func() bool {
		for _, n := range tc.nodes {
			if n != old && n.IsLeader() {
				return true
			}
		}
		return false
	})
	l := tc.leader(20 * time.Second)
	if l == old {
		t.Fatal("the node with the full disk leads")
	}
	g, err := l.TryAcquire(ctx, api.AcquireRequest{Key: "after", Owner: "o", TTLMs: 600000})
	if err != nil {
		t.Fatalf("the cluster does not serve with one full disk: %v", err)
	}
	fullID.Store("")
	want := l.AppliedIndex()
	tc.eventually(30*time.Second, "the old leader caught up", func() bool { return old.AppliedIndex() >= want })
	info, err := old.Inspect(ctx, "after", api.ReadOptions{Stale: true})
	if err != nil || len(info.Holders) != 1 || info.Holders[0].Fence != g.Fence {
		t.Fatalf("after on the old leader: %+v, %v; want fence %d", info, err, g.Fence)
	}
}

// A segment sealed whose rotation was never recorded in the meta store
// (the append that filled it succeeded, committing the rotation failed,
// then the node stopped): raft-wal would open it as a sealed tail and
// refuse every append, at every restart. The check records the rotation.
func TestWALRecordsAnUnrecordedRotation(t *testing.T) {
	smallSegments(t)
	dir := t.TempDir()
	s, err := openRaftStorage(nil, dir, LogStoreWAL, nil, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	walPath := filepath.Join(dir, walDir)
	segments := func() int {
		st, err := s.wal.db.Load(walPath)
		if err != nil {
			t.Fatal(err)
		}
		return len(st.Segments)
	}
	// Append until a rotation is recorded, leaving an empty new tail.
	var last uint64
	for i := uint64(1); segments() < 2; i++ {
		if i > 1000 {
			t.Fatal("no rotation")
		}
		storeEntries(t, s.logs, i, i)
		last = i
		if st, _ := s.wal.db.Load(walPath); len(st.Segments) == 1 {
			sc, err := scanSegment(OSDisk{}, filepath.Join(walPath, segment.FileName(st.Segments[0])), st.Segments[0])
			if err != nil {
				t.Fatal(err)
			}
			if sc.sealed {
				deadline := time.Now().Add(10 * time.Second)
				for segments() < 2 && time.Now().Before(deadline) {
					time.Sleep(time.Millisecond) // the rotation runs in raft-wal's goroutine
				}
			}
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Undo the rotation's record, as if its commit had failed.
	db := &metadb.BoltMetaDB{}
	st, err := db.Load(walPath)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Segments) != 2 {
		t.Fatalf("%d segments", len(st.Segments))
	}
	if err := os.Remove(filepath.Join(walPath, segment.FileName(st.Segments[1]))); err != nil {
		t.Fatal(err)
	}
	tail := st.Segments[0]
	tail.SealTime, tail.MaxIndex, tail.IndexStart = time.Time{}, 0, 0
	st.Segments = []types.SegmentInfo{tail}
	st.NextSegmentID--
	if err := db.CommitState(st); err != nil {
		t.Fatal(err)
	}
	db.Close()

	var logs logBuffer
	s, err = openRaftStorage(nil, dir, LogStoreWAL, nil, bufLogger(&logs))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !strings.Contains(logs.String(), "rotation not recorded") {
		t.Errorf("no WARN about the unrecorded rotation; log:\n%s", logs.String())
	}
	storeEntries(t, s.logs, last+1, last+5)
	var l raft.Log
	for i := uint64(1); i <= last+5; i++ {
		if err := s.logs.GetLog(i, &l); err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
	}
}

// A truncation of the tail seals it (raft-wal's ForceSeal); when the
// write of its index frame tears, raft-wal keeps the seal's offset and
// reports the seal done when the truncation is retried, although the
// index frame is not on disk. walLog reopens the WAL after the failed
// truncation so the retry seals for real; a log that got the bogus seal
// anyway (a node that ran the WAL directly, or crashed between the two)
// has its index frame rebuilt at the next start instead of refusing to
// start.
func TestWALTruncationAfterTornSeal(t *testing.T) {
	for _, tc := range []struct {
		name  string
		raw   bool // truncate through raft-wal directly, not walLog
		crash bool // restart between the failed truncation and its retry
	}{
		{"walLog reopens after the failed truncation", false, false},
		{"checkWAL rebuilds the index frame", true, false},
		{"a restart clears the torn seal", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var tear atomic.Bool
			faults := func(op StorageOp, size int) (int, error) {
				if op == StorageWrite && tear.CompareAndSwap(true, false) {
					return size / 2, syscall.EIO
				}
				return 0, nil
			}
			dir := t.TempDir()
			var logs logBuffer
			s, err := openRaftStorage(nil, dir, LogStoreWAL, faults, bufLogger(&logs))
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = s.Close() }()
			writeEntries(t, s, 1, 10)
			truncate := s.logs.DeleteRange
			if tc.raw {
				truncate = s.wal.w.DeleteRange
			}
			tear.Store(true)
			if err := truncate(8, 10); err == nil {
				t.Fatal("the truncation succeeded with its seal torn")
			}
			if tc.crash {
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
				logs = logBuffer{}
				if s, err = openRaftStorage(nil, dir, LogStoreWAL, nil, bufLogger(&logs)); err != nil {
					t.Fatalf("restart after the torn seal: %v", err)
				}
				if !strings.Contains(logs.String(), "not completely written") {
					t.Errorf("no WARN about the torn seal; log:\n%s", logs.String())
				}
				truncate = s.logs.DeleteRange
			}
			if err := truncate(8, 10); err != nil {
				t.Fatalf("retried truncation: %v", err)
			}
			var repl []*raft.Log
			for i := uint64(8); i <= 12; i++ {
				repl = append(repl, &raft.Log{Index: i, Term: 2, Type: raft.LogCommand, Data: []byte(fmt.Sprintf("new-%d", i))})
			}
			if err := s.logs.StoreLogs(repl); err != nil {
				t.Fatal(err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			logs = logBuffer{}
			s, err = openRaftStorage(nil, dir, LogStoreWAL, nil, bufLogger(&logs))
			if err != nil {
				t.Fatalf("reopen: %v", err)
			}
			for i := uint64(1); i <= 12; i++ {
				want := fmt.Sprintf("entry-%d", i)
				if i >= 8 {
					want = fmt.Sprintf("new-%d", i)
				}
				var l raft.Log
				if err := s.logs.GetLog(i, &l); err != nil || string(l.Data) != want {
					t.Fatalf("entry %d after reopen: %q, %v; want %q", i, l.Data, err, want)
				}
			}
			if rebuilt := strings.Contains(logs.String(), "rebuilt it"); rebuilt != tc.raw {
				t.Errorf("index frame rebuilt at start: %v, want %v; log:\n%s", rebuilt, tc.raw, logs.String())
			}
			// Rebuilt once: the next start finds the segment sealed.
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			logs = logBuffer{}
			if s, err = openRaftStorage(nil, dir, LogStoreWAL, nil, bufLogger(&logs)); err != nil {
				t.Fatalf("second reopen: %v", err)
			}
			if strings.Contains(logs.String(), "rebuilt it") {
				t.Errorf("index frame rebuilt again; log:\n%s", logs.String())
			}
		})
	}
}
