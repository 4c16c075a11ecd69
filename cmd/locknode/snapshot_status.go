package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"strings"
	"time"
)

// snapshotInfo is what `snapshot status FILE` found in a snapshot file.
type snapshotInfo struct {
	File string `json:"file"`
	Size int64  `json:"size"`
	// SHA256 of the whole file, to compare copies of a backup.
	SHA256 string `json:"sha256"`
	// Envelope is the backup file's format (index, term and checksum
	// around the snapshot); 0: a file without one, from an older release.
	Envelope int `json:"envelope"`
	// Format is the snapshot format's version (its first byte).
	Format         int    `json:"format"`
	ClusterVersion uint32 `json:"cluster_version"`
	// Index is the raft index the snapshot was taken at: a cluster
	// restored from it continues its log, and fences, above it.
	Index uint64 `json:"index"`
	// Term is the raft term of the entry at Index; 0: not recorded.
	Term uint64 `json:"term"`
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
	Verified bool `json:"verified"`
	// ChecksumSHA256 is the envelope's SHA-256, checked against the
	// file's bytes ("" for a file without the envelope).
	ChecksumSHA256 string `json:"checksum_sha256,omitempty"`
	// Checksum says what was checked, as status prints it.
	Checksum string `json:"checksum"`
}

// noChecksumNote is the checksum line of a file without the envelope.
const noChecksumNote = "no checksum (a backup from an older release)"

// maxPlausibleFormat is above every snapshot format there is or will be
// for long: a first byte beyond it is no snapshot, rather than one from
// a newer release.
const maxPlausibleFormat = 32

// withoutPkg is err's text without the decoder's package prefixes.
func withoutPkg(err error) string {
	return strings.NewReplacer("fsm: restore: ", "", "fsm: ", "").Replace(err.Error())
}

// inspectSnapshot reads, checks and decodes file without a running node.
func inspectSnapshot(file string) (snapshotInfo, error) {
	info := snapshotInfo{File: file}
	b, err := openBackup(file)
	if err != nil {
		return info, err
	}
	defer b.Close()
	info.Size, info.Envelope = b.size, b.envelope
	var first [1]byte
	if _, err := b.snap.ReadAt(first[:], 0); err != nil {
		return info, fmt.Errorf("reading %s: %w", file, err)
	}
	info.Format = int(first[0])
	if info.Format > maxPlausibleFormat {
		return info, fmt.Errorf("%s is not a snapshot saved by \"locknode snapshot save\": its first byte (%d) is no snapshot format", file, info.Format)
	}
	t, err := b.decode(file)
	if err != nil {
		return info, err
	}
	h := sha256.New()
	if _, err := io.Copy(h, io.NewSectionReader(b.f, 0, b.size)); err != nil {
		return info, fmt.Errorf("reading %s: %w", file, err)
	}
	info.SHA256 = hex.EncodeToString(h.Sum(nil))
	st, sc := t.Stats(), t.ScriptStats()
	info.ClusterVersion = t.Version()
	info.Index, info.Term = t.AppliedIndex(), b.term
	info.ClusterTimeMs = t.Now()
	info.Locks, info.Keys, info.Holds, info.Waiters, info.Sessions, info.Fences = st.Locks, st.Keys, st.Holds, st.Waiters, st.Sessions, st.Fences
	info.Scripts = sc.Loaded + sc.Eval
	info.Verified = true
	info.Checksum = noChecksumNote
	if b.envelope > 0 {
		info.ChecksumSHA256 = b.sum
		info.Checksum = "verified (sha256 " + b.sum + ")"
	}
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
	if info.Envelope > 0 {
		fmt.Fprintf(w, "backup format:   %d\n", info.Envelope)
	} else {
		fmt.Fprintf(w, "backup format:   none (a backup from an older release)\n")
	}
	fmt.Fprintf(w, "format:          %d\n", info.Format)
	fmt.Fprintf(w, "cluster version: %d\n", info.ClusterVersion)
	fmt.Fprintf(w, "index:           %d\n", info.Index)
	switch {
	case info.Term > 0:
		fmt.Fprintf(w, "term:            %d\n", info.Term)
	case info.Envelope == 0:
		fmt.Fprintf(w, "term:            not recorded (a backup from an older release)\n")
	default:
		fmt.Fprintf(w, "term:            not recorded (the node that sent it did not say)\n")
	}
	fmt.Fprintf(w, "cluster time:    %s\n", taken)
	fmt.Fprintf(w, "locks:           %d (holds %d, waiters %d)\n", info.Locks, info.Holds, info.Waiters)
	fmt.Fprintf(w, "keys:            %d\n", info.Keys)
	fmt.Fprintf(w, "sessions:        %d\n", info.Sessions)
	fmt.Fprintf(w, "fences:          %d\n", info.Fences)
	fmt.Fprintf(w, "scripts:         %d\n", info.Scripts)
	fmt.Fprintf(w, "checksum:        %s\n", info.Checksum)
	fmt.Fprintf(w, "verified:        %v (decoded whole, to its last byte)\n", info.Verified)
}
