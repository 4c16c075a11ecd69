package simdisk

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

func read(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func exists(t *testing.T, path string) bool {
	t.Helper()
	_, err := os.Stat(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	return err == nil
}

func mustWrite(t *testing.T, f interface {
	WriteAt([]byte, int64) (int, error)
}, p string, off int64) {
	t.Helper()
	if _, err := f.WriteAt([]byte(p), off); err != nil {
		t.Fatal(err)
	}
}

// A write is visible at once; what was synced survives a crash and what
// was not is undone, back to the last sync.
func TestSyncedSurvivesUnsyncedLost(t *testing.T) {
	dir := t.TempDir()
	d := New(1)
	path := filepath.Join(dir, "seg")
	f, err := d.Create(path, 16)
	if err != nil {
		t.Fatal(err)
	}
	mustWrite(t, f, "durable!", 0)
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := d.SyncDir(dir); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, f, "lost", 8)
	mustWrite(t, f, "LOST", 0)
	got := make([]byte, 12)
	if _, err := f.ReadAt(got, 0); err != nil || string(got) != "LOSTble!lost" {
		t.Fatalf("read before the crash = %q, %v; want the writes visible at once", got, err)
	}
	if n := d.Unsynced(); n != 2 {
		t.Fatalf("Unsynced = %d, want 2", n)
	}
	f.Close()
	if err := d.Crash(false); err != nil {
		t.Fatal(err)
	}
	want := append([]byte("durable!"), make([]byte, 8)...)
	if got := read(t, path); !bytes.Equal(got, want) {
		t.Fatalf("after the crash = %q, want %q", got, want)
	}
	if n := d.Unsynced(); n != 0 {
		t.Fatalf("Unsynced after the crash = %d", n)
	}
}

// With tear, each file keeps a prefix of its unsynced writes, the last of
// it cut at some byte; synced bytes are untouched, and one seed tears the
// same way each time.
func TestTornCrashKeepsAPrefix(t *testing.T) {
	run := func(seed uint64) []byte {
		dir := t.TempDir()
		d := New(seed)
		path := filepath.Join(dir, "seg")
		f, err := d.Create(path, 64)
		if err != nil {
			t.Fatal(err)
		}
		mustWrite(t, f, "SYNCED", 0)
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
		if err := d.SyncDir(dir); err != nil {
			t.Fatal(err)
		}
		for i, w := range []string{"aaaaaaaa", "bbbbbbbb", "cccccccc", "dddddddd"} {
			mustWrite(t, f, w, int64(8+8*i))
		}
		f.Close()
		if err := d.Crash(true); err != nil {
			t.Fatal(err)
		}
		got := read(t, path)
		if len(got) != 64 || string(got[:6]) != "SYNCED" {
			t.Fatalf("seed %d: synced bytes lost: %q", seed, got)
		}
		// A prefix: the written bytes, then zeros only.
		body := got[8:40]
		full := []byte("aaaaaaaabbbbbbbbccccccccdddddddd")
		n := 0
		for n < len(body) && body[n] == full[n] {
			n++
		}
		if !bytes.Equal(body[n:], make([]byte, len(body)-n)) {
			t.Fatalf("seed %d: not a prefix of the writes: %q", seed, body)
		}
		return got
	}
	lengths := map[int]bool{}
	for seed := range uint64(40) {
		a, b := run(seed), run(seed)
		if !bytes.Equal(a, b) {
			t.Fatalf("seed %d tore two ways: %q and %q", seed, a, b)
		}
		lengths[len(bytes.TrimRight(a[8:40], "\x00"))] = true
	}
	if len(lengths) < 5 {
		t.Fatalf("40 seeds tore at only %d points (%v): the tear is not drawn", len(lengths), lengths)
	}
}

// A created file is durable only once its directory is synced; synced
// without its own sync, it is there and empty.
func TestCreateNeedsDirSync(t *testing.T) {
	dir := t.TempDir()
	d := New(1)
	noDir := filepath.Join(dir, "no-dir-sync")
	noFile := filepath.Join(dir, "no-file-sync")
	both := filepath.Join(dir, "both")
	for _, p := range []string{noDir, noFile, both} {
		f, err := d.Create(p, 8)
		if err != nil {
			t.Fatal(err)
		}
		mustWrite(t, f, "data", 0)
		if p != noFile {
			if err := f.Sync(); err != nil {
				t.Fatal(err)
			}
		}
		f.Close()
		if p == noDir {
			if err := d.Crash(false); err != nil {
				t.Fatal(err)
			}
			if exists(t, noDir) {
				t.Fatal("a file whose directory was never synced survived a crash")
			}
			continue
		}
	}
	tmp, err := d.CreateTemp(dir, "t-*")
	if err != nil {
		t.Fatal(err)
	}
	tmp.Close()
	if err := d.SyncDir(dir); err != nil {
		t.Fatal(err)
	}
	tmp2, err := d.CreateTemp(dir, "t-*")
	if err != nil {
		t.Fatal(err)
	}
	tmp2.Close()
	if err := d.Crash(false); err != nil {
		t.Fatal(err)
	}
	if got := read(t, both); string(got) != "data\x00\x00\x00\x00" {
		t.Fatalf("synced file and directory = %q", got)
	}
	if got := read(t, noFile); len(got) != 0 {
		t.Fatalf("a file never synced (its directory synced) = %q, want empty", got)
	}
	if !exists(t, tmp.Name()) || exists(t, tmp2.Name()) {
		t.Fatalf("temp files: synced entry kept %v (want true), unsynced kept %v (want false)", exists(t, tmp.Name()), exists(t, tmp2.Name()))
	}
}

// A removal is durable once the directory is synced; before, a crash
// brings the file back with its durable content. A file created since
// the directory's last sync does not come back.
func TestRemoveNeedsDirSync(t *testing.T) {
	dir := t.TempDir()
	d := New(1)
	mk := func(name string) string {
		p := filepath.Join(dir, name)
		f, err := d.Create(p, 0)
		if err != nil {
			t.Fatal(err)
		}
		mustWrite(t, f, "v1", 0)
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
		f.Close()
		return p
	}
	back, gone := mk("back"), mk("gone")
	if err := d.SyncDir(dir); err != nil {
		t.Fatal(err)
	}
	f, err := d.Open(back, true)
	if err != nil {
		t.Fatal(err)
	}
	mustWrite(t, f, "v2", 0) // not synced
	f.Close()
	never := mk("never")
	for _, p := range []string{back, gone, never} {
		if err := d.Remove(p); err != nil {
			t.Fatal(err)
		}
		if exists(t, p) {
			t.Fatalf("%s still there after Remove", p)
		}
	}
	ents, err := d.ReadDir(dir)
	if err != nil || len(ents) != 0 {
		t.Fatalf("ReadDir after the removals = %v, %v; want nothing", ents, err)
	}
	if err := d.Crash(false); err != nil {
		t.Fatal(err)
	}
	if got := read(t, back); string(got) != "v1" {
		t.Fatalf("a file removed without a directory sync = %q after a crash, want it back as durable (v1)", got)
	}
	if !exists(t, gone) || exists(t, never) {
		t.Fatalf("after the crash: durable file removed unsynced back %v (want true), never-durable file back %v (want false)",
			exists(t, gone), exists(t, never))
	}
	// A removal made durable stays.
	if err := d.Remove(gone); err != nil {
		t.Fatal(err)
	}
	if err := d.SyncDir(dir); err != nil {
		t.Fatal(err)
	}
	if err := d.Crash(false); err != nil {
		t.Fatal(err)
	}
	if exists(t, gone) {
		t.Fatal("a removal followed by a directory sync was undone by a crash")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("after the crashes the directory holds %d entries, want 1 (back)", len(ents))
	}
}

// Open on a missing file and Remove of one fail as the OS does.
func TestErrorsAreTheOSs(t *testing.T) {
	d := New(1)
	missing := filepath.Join(t.TempDir(), "missing")
	if _, err := d.Open(missing, true); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Open(missing) = %v, want ErrNotExist", err)
	}
	if err := d.Remove(missing); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Remove(missing) = %v, want ErrNotExist", err)
	}
	if _, err := d.Create(missing, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Create(missing, 0); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("Create(existing) = %v, want ErrExist", err)
	}
}
