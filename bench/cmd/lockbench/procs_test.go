package main

import (
	"os"
	"path/filepath"
	"testing"
)

func TestParseStatusKB(t *testing.T) {
	status := "Name:\tlocknode\nVmPeak:\t  900 kB\nVmHWM:\t  812340 kB\nVmRSS:\t  301234 kB\nThreads:\t9\n"
	for _, tc := range []struct {
		field string
		want  int64
		err   bool
	}{
		{"VmRSS", 301234 << 10, false},
		{"VmHWM", 812340 << 10, false},
		{"VmSwap", 0, true},
		{"Vm", 0, true}, // a prefix of a field is not the field
	} {
		got, err := parseStatusKB(status, tc.field)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("%s: got %d, %v; want %d (error %v)", tc.field, got, err, tc.want, tc.err)
		}
	}
}

func TestDirUsage(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "a"), make([]byte, 10000), 0o644); err != nil {
		t.Fatal(err)
	}
	// A sparse file: 8 MiB long, nothing written.
	f, err := os.Create(filepath.Join(dir, "sub", "sparse"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(8 << 20); err != nil {
		t.Fatal(err)
	}
	f.Close()
	size, disk, files := dirUsage(dir)
	if size != 10000+8<<20 || files != 2 {
		t.Fatalf("size %d files %d, want %d and 2", size, files, 10000+8<<20)
	}
	if disk < 10000 || disk >= 8<<20 {
		t.Fatalf("disk %d: want the written file's blocks (≥ 10000) and not the sparse one's length", disk)
	}
	if s, d, n := dirUsage(filepath.Join(dir, "missing")); s != 0 || d != 0 || n != 0 {
		t.Fatalf("missing dir: %d %d %d", s, d, n)
	}
}
