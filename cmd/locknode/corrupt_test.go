package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	wal "github.com/hashicorp/raft-wal"
)

// `locknode serve` on a data directory whose raft log is damaged before
// its tail refuses to start, saying which segment and how to recover.
func TestServeRefusesACorruptLog(t *testing.T) {
	data := t.TempDir()
	dir := filepath.Join(data, "wal")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	w, err := wal.Open(dir, wal.WithSegmentSize(16<<10), wal.WithLogger(hclog.NewNullLogger()))
	if err != nil {
		t.Fatal(err)
	}
	for i := uint64(1); i <= 300; i++ {
		if err := w.StoreLogs([]*raft.Log{{Index: i, Term: 1, Data: bytes.Repeat([]byte{1}, 200)}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	segs, _ := filepath.Glob(filepath.Join(dir, "*.wal"))
	slices.Sort(segs)
	if len(segs) < 3 {
		t.Fatalf("%d segments", len(segs))
	}
	f, err := os.OpenFile(segs[1], os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(bytes.Repeat([]byte{0xa5}, 3000), 4096); err != nil {
		t.Fatal(err)
	}
	f.Close()

	code, _, errb := execLine("serve", "--id", "n1", "--data", data, "--bootstrap",
		"--raft-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0", "--resp-addr", "127.0.0.1:0")
	if code == 0 {
		t.Fatal("serve started on a corrupt log")
	}
	for _, want := range []string{"raft log is corrupt", filepath.Base(segs[1]), "remove its data directory", "snapshot restore"} {
		if !strings.Contains(errb, want) {
			t.Errorf("stderr does not say %q:\n%s", want, errb)
		}
	}
}
