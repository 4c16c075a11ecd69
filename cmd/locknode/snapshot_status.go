package main

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/locknode/locknode/fsm"
)

// snapshotInfo is what `snapshot status FILE` found in a snapshot file.
type snapshotInfo struct {
	File string `json:"file"`
	Size int64  `json:"size"`
	// SHA256 of the whole file, to compare copies of a backup.
	SHA256 string `json:"sha256"`
	// Format is the snapshot format's version (its first byte).
	Format         int    `json:"format"`
	ClusterVersion uint32 `json:"cluster_version"`
	// Index is the raft index the snapshot was taken at: a cluster
	// restored from it continues its log, and fences, above it.
	Index uint64 `json:"index"`
	// ClusterTimeMs is the cluster clock (unix ms) when it was taken.
	ClusterTimeMs int64 `json:"cluster_time_ms"`
	Locks         int   `json:"locks"`
	Keys          int   `json:"keys"` // every key, locks included
	Holds         int   `json:"holds"`
	Waiters       int   `json:"waiters"`
	Sessions      int   `json:"sessions"`
	Fences        int   `json:"fences"` // resources in the fence registry
	Scripts       int   `json:"scripts"`
	// Verified: every byte decoded into a whole table, nothing left over.
	// The format carries no checksum of its own; decoding it whole is
	// what can be checked (a truncated or altered file fails it unless
	// the change happens to decode).
	Verified bool   `json:"verified"`
	Checksum string `json:"checksum"`
}

// snapshotChecksumNote says what the verification covers.
const snapshotChecksumNote = "none in the format; the file decoded whole, to its last byte"

// maxPlausibleFormat is above every snapshot format there is or will be
// for long: a first byte beyond it is no snapshot, rather than one from
// a newer release.
const maxPlausibleFormat = 32

// withoutPkg is err's text without the decoder's package prefixes.
func withoutPkg(err error) string {
	return strings.NewReplacer("fsm: restore: ", "", "fsm: ", "").Replace(err.Error())
}

// inspectSnapshot reads and decodes file without a running node.
func inspectSnapshot(file string) (snapshotInfo, error) {
	info := snapshotInfo{File: file}
	f, err := os.Open(file)
	if err != nil {
		return info, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return info, err
	}
	if fi.IsDir() {
		return info, fmt.Errorf("%s is a directory, not a snapshot file", file)
	}
	info.Size = fi.Size()
	if info.Size == 0 {
		return info, fmt.Errorf("%s is empty: not a snapshot", file)
	}
	h := sha256.New()
	br := bufio.NewReaderSize(io.TeeReader(f, h), 1<<20)
	first, err := br.Peek(1)
	if err != nil {
		return info, fmt.Errorf("reading %s: %w", file, err)
	}
	info.Format = int(first[0])
	if info.Format > maxPlausibleFormat {
		return info, fmt.Errorf("%s is not a snapshot saved by \"locknode snapshot save\": its first byte (%d) is no snapshot format", file, info.Format)
	}
	t := fsm.New(fsm.Config{})
	if err := t.Restore(br); err != nil {
		if errors.Is(err, fsm.ErrBadVersion) {
			return info, fmt.Errorf("%s is a snapshot this binary does not read (format %d): %s", file, info.Format, withoutPkg(err))
		}
		return info, fmt.Errorf("%s does not decode as a snapshot (damaged, truncated, or not a snapshot saved by \"locknode snapshot save\"): %s", file, withoutPkg(err))
	}
	// Restore stops at the snapshot's end; hash what it did not read.
	if _, err := io.Copy(io.Discard, br); err != nil {
		return info, fmt.Errorf("reading %s: %w", file, err)
	}
	info.SHA256 = hex.EncodeToString(h.Sum(nil))
	st, sc := t.Stats(), t.ScriptStats()
	info.ClusterVersion = t.Version()
	info.Index = t.AppliedIndex()
	info.ClusterTimeMs = t.Now()
	info.Locks, info.Keys, info.Holds, info.Waiters, info.Sessions, info.Fences = st.Locks, st.Keys, st.Holds, st.Waiters, st.Sessions, st.Fences
	info.Scripts = sc.Loaded + sc.Eval
	info.Verified = true
	info.Checksum = snapshotChecksumNote
	return info, nil
}

// printSnapshotInfo writes info as `snapshot status` shows it.
func printSnapshotInfo(w io.Writer, info snapshotInfo) {
	taken := "-"
	if info.ClusterTimeMs > 0 {
		taken = time.UnixMilli(info.ClusterTimeMs).UTC().Format(time.RFC3339)
	}
	fmt.Fprintf(w, "file:            %s (%d bytes)\n", info.File, info.Size)
	fmt.Fprintf(w, "sha256:          %s\n", info.SHA256)
	fmt.Fprintf(w, "format:          %d\n", info.Format)
	fmt.Fprintf(w, "cluster version: %d\n", info.ClusterVersion)
	fmt.Fprintf(w, "index:           %d\n", info.Index)
	fmt.Fprintf(w, "term:            not recorded (the file holds the lock table only)\n")
	fmt.Fprintf(w, "cluster time:    %s\n", taken)
	fmt.Fprintf(w, "locks:           %d (holds %d, waiters %d)\n", info.Locks, info.Holds, info.Waiters)
	fmt.Fprintf(w, "keys:            %d\n", info.Keys)
	fmt.Fprintf(w, "sessions:        %d\n", info.Sessions)
	fmt.Fprintf(w, "fences:          %d\n", info.Fences)
	fmt.Fprintf(w, "scripts:         %d\n", info.Scripts)
	fmt.Fprintf(w, "verified:        %v (checksum: %s)\n", info.Verified, info.Checksum)
}
