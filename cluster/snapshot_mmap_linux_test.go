//go:build linux

package cluster

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// dropMapped lets pages of a file mapping go without changing what the
// mapping reads, for any part of it: empty, under a page, unaligned at
// either end, all of it.
func TestDropMappedKeepsBytes(t *testing.T) {
	pg := os.Getpagesize()
	want := make([]byte, 5*pg+123)
	for i := range want {
		want[i] = byte(i*7 + i/pg)
	}
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, want, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, unmap, err := mapFile(f, int64(len(want)))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := unmap(); err != nil {
			t.Error(err)
		}
	}()
	for _, tc := range []struct {
		name   string
		lo, hi int
	}{
		{"empty", 10, 10},
		{"under a page", 1, pg - 1},
		{"unaligned both ends", 100, 3*pg + 5},
		{"aligned", pg, 3 * pg},
		{"to the end", 2*pg + 1, len(want)},
		{"all", 0, len(want)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !bytes.Equal(b, want) {
				t.Fatal("mapping differs from the file before the drop")
			}
			dropMapped(b[tc.lo:tc.hi])
			if !bytes.Equal(b, want) {
				t.Fatal("mapping differs from the file after the drop")
			}
		})
	}
}

// The pages dropMapped lets go leave the resident set: all six pages of
// a mapping read through are resident, then only the last, partial one
// (dropMapped drops whole pages only).
func TestDropMappedLowersRSS(t *testing.T) {
	pg := os.Getpagesize()
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, bytes.Repeat([]byte{1}, 5*pg+123), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, unmap, err := mapFile(f, 5*int64(pg)+123)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = unmap() }()
	sum := 0
	for i := 0; i < len(b); i += pg {
		sum += int(b[i])
	}
	sum += int(b[len(b)-1])
	if sum != 7 {
		t.Fatalf("read %d, want 7", sum)
	}
	if got := mappingRSS(t, b); got != 6*pg {
		t.Fatalf("resident after reading every page: %d bytes, want %d", got, 6*pg)
	}
	dropMapped(b)
	if got := mappingRSS(t, b); got != pg {
		t.Fatalf("resident after the drop: %d bytes, want %d (the partial last page)", got, pg)
	}
}

// mappingRSS is the Rss of the mapping starting at b, from
// /proc/self/smaps.
func mappingRSS(t *testing.T, b []byte) int {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skip("no /proc/self/smaps:", err)
	}
	defer f.Close()
	start := fmt.Sprintf("%x-", uintptrOf(b))
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// The mapping's header line, then its fields; Rss comes before
		// the next mapping's header.
		line := sc.Text()
		if strings.HasPrefix(line, start) {
			in = true
			continue
		}
		if rest, ok := strings.CutPrefix(line, "Rss:"); in && ok {
			kb, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
			if err != nil {
				t.Fatalf("smaps line %q: %v", line, err)
			}
			return kb << 10
		}
	}
	t.Fatalf("mapping at %s not in /proc/self/smaps", start)
	return 0
}

// A file shorter than the size asked for is not mapped (a read past its
// end through the mapping would be a SIGBUS): Persist takes the ReadAt
// path, which reports the short file as an error.
func TestMapFileRefusesShortFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, make([]byte, 100), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, size := range []int64{101, int64(os.Getpagesize()) + 1} {
		if b, unmap, err := mapFile(f, size); err == nil {
			unmap()
			t.Errorf("mapFile(100-byte file, %d) mapped %d bytes", size, len(b))
		}
	}
	b, unmap, err := mapFile(f, 100)
	if err != nil {
		t.Fatalf("mapFile(100-byte file, 100): %v", err)
	}
	defer unmap()
	if len(b) != 100 {
		t.Fatalf("mapped %d bytes, want 100", len(b))
	}
}
