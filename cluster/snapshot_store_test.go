package cluster

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// smallDisk mounts a tmpfs of size bytes for the test, or skips when
// this process may not mount one (not root, or not Linux).
func smallDisk(t *testing.T, size string) string {
	t.Helper()
	if runtime.GOOS != "linux" || os.Geteuid() != 0 {
		t.Skip("needs root on Linux to mount a small tmpfs (a full disk)")
	}
	if _, err := exec.LookPath("mount"); err != nil {
		if os.Getenv("LOCKNODE_CI") == "1" {
			t.Fatalf("mount is missing: %v", err)
		}
		t.Skipf("mount is missing: %v", err)
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs (a full disk): %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// partials lists the .tmp directories under dataDir/snapshots.
func partials(t *testing.T, dataDir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dataDir, snapshotsDir, "*"+partialSuffix))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestPartialSnapshotsRemovedAtOpen(t *testing.T) {
	dir := t.TempDir()
	part := filepath.Join(dir, snapshotsDir, "3-120-1700000000000.tmp")
	if err := os.MkdirAll(part, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(part, "state.bin"), make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	fsmTmp := filepath.Join(dir, ".fsm-snapshot-123.tmp")
	if err := os.WriteFile(fsmTmp, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	var logs logBuffer
	s, err := newCleanSnapshotStore(nil, dir, 2, bufLogger(&logs))
	if err != nil {
		t.Fatal(err)
	}
	if p := partials(t, dir); len(p) != 0 {
		t.Fatalf("partial snapshots left at open: %v", p)
	}
	if _, err := os.Stat(fsmTmp); !os.IsNotExist(err) {
		t.Fatalf("the FSM's snapshot file left at open: %v", err)
	}
	if !strings.Contains(logs.String(), "removed a partial snapshot") || !strings.Contains(logs.String(), "bytes=1048576") {
		t.Errorf("no WARN naming the removed partial snapshot and its size; log:\n%s", logs.String())
	}
	// A snapshot still works.
	sink, err := s.Create(1, 10, 1, raft.Configuration{}, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sink.Write([]byte("state")); err != nil {
		t.Fatal(err)
	}
	if err := sink.Close(); err != nil {
		t.Fatal(err)
	}
	if l, err := s.List(); err != nil || len(l) != 1 {
		t.Fatalf("List = %v, %v; want the one snapshot", l, err)
	}
}

// A snapshot (or install: raft cancels its sink when the copy fails)
// that runs out of space leaves no partial directory, so the space comes
// back; and a Create that fails for want of space leaves none either.
func TestFailedSnapshotLeavesNoPartial(t *testing.T) {
	dir := smallDisk(t, "4m")
	freeBefore, _, err := diskSpace(dir)
	if err != nil {
		t.Fatal(err)
	}
	s, err := newCleanSnapshotStore(nil, dir, 2, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	fill := func(sink raft.SnapshotSink) {
		t.Helper()
		chunk := bytes.Repeat([]byte{7}, 256<<10)
		for i := 0; i < 64; i++ {
			if _, err := sink.Write(chunk); err != nil {
				return
			}
		}
		t.Fatal("writing 16 MiB to a 4 MiB disk did not fail")
	}
	for _, end := range []string{"cancel", "close"} {
		sink, err := s.Create(1, 10, 1, raft.Configuration{}, 1, nil)
		if err != nil {
			t.Fatal(err)
		}
		fill(sink)
		if end == "cancel" {
			_ = sink.Cancel()
		} else if err := sink.Close(); err == nil {
			t.Fatal("Close of a snapshot that ran out of space succeeded")
		}
		if p := partials(t, dir); len(p) != 0 {
			t.Fatalf("%s after ENOSPC left %v", end, p)
		}
		if free, _, _ := diskSpace(dir); free+64<<10 < freeBefore {
			t.Fatalf("%s after ENOSPC: %d bytes free, %d before", end, free, freeBefore)
		}
	}

	// The disk full before the snapshot starts: Create fails.
	filler := filepath.Join(dir, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := f.Write(make([]byte, 4096)); err != nil {
			break
		}
	}
	f.Close()
	if _, err := s.Create(1, 11, 1, raft.Configuration{}, 1, nil); err == nil {
		t.Fatal("Create on a full disk succeeded")
	}
	if p := partials(t, dir); len(p) != 0 {
		t.Fatalf("a failed Create left %v", p)
	}
}
