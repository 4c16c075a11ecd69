package main

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/locknode/locknode/client"
	"github.com/locknode/locknode/cluster"
	"github.com/locknode/locknode/fsm"
)

// A backup file (what `snapshot save` writes) is the snapshot streamed
// by GET /v1/snapshot in an envelope:
//
//	locknode-backup 1 index=<index> term=<term>\n
//	<the snapshot's bytes, exactly as the node sent them>
//	\nlocknode-backup-end length=<bytes of the snapshot> sha256=<hex>\n
//
// The SHA-256 covers everything before the end line (the first line and
// the snapshot). When saving, the snapshot's bytes are also checked
// against the SHA-256 the node computed as it sent them (the stream's
// HTTP trailer), so the checksum in the file vouches for the node's
// bytes: damage on the way, on the disk or in a copy all fail it. A file
// without the envelope is a backup from an older release: it is still
// read, without a checksum.
const (
	backupMagic   = "locknode-backup"
	backupEnd     = "locknode-backup-end"
	backupVersion = 1
	// maxBackupLine bounds the first and the end line.
	maxBackupLine = 256
)

var (
	// errBackupChecksum: the file's bytes are not the ones its checksum
	// was taken of.
	errBackupChecksum = errors.New("checksum mismatch")
	// errBackupTruncated: the file does not end with its end line.
	errBackupTruncated = errors.New("not whole")
)

// backupFile is an opened backup: the snapshot's bytes and what the
// envelope, if any, said of them.
type backupFile struct {
	f    *os.File
	size int64
	// Envelope is the envelope's version; 0 for a file without one.
	envelope int
	index    uint64 // from the envelope
	term     uint64 // from the envelope; 0: not recorded
	// sum is the verified SHA-256 of the envelope (hex).
	sum string
	// snap is the snapshot's bytes.
	snap *io.SectionReader
}

func (b *backupFile) Close() error { return b.f.Close() }

// openBackup opens file and, if it has the envelope, checks its length
// and checksum (reading it whole) before returning: a damaged backup is
// refused before anything reads its snapshot.
func openBackup(file string) (*backupFile, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	b := &backupFile{f: f}
	if err := b.open(file); err != nil {
		f.Close()
		return nil, err
	}
	return b, nil
}

func (b *backupFile) open(file string) error {
	fi, err := b.f.Stat()
	if err != nil {
		return err
	}
	if fi.IsDir() {
		return fmt.Errorf("%s is a directory, not a snapshot file", file)
	}
	b.size = fi.Size()
	if b.size == 0 {
		return fmt.Errorf("%s is empty: not a snapshot", file)
	}
	head := make([]byte, min(b.size, maxBackupLine))
	if _, err := b.f.ReadAt(head, 0); err != nil {
		return fmt.Errorf("reading %s: %w", file, err)
	}
	if !bytes.HasPrefix(head, []byte(backupMagic+" ")) {
		// No envelope: the whole file is the snapshot.
		b.snap = io.NewSectionReader(b.f, 0, b.size)
		return nil
	}
	nl := bytes.IndexByte(head, '\n')
	if nl < 0 {
		return fmt.Errorf("%s is %w: the backup's first line has no end (a truncated copy, or not a backup)", file, errBackupTruncated)
	}
	var ver int
	if _, err := fmt.Sscanf(string(head[:nl]), backupMagic+" %d index=%d term=%d", &ver, &b.index, &b.term); err != nil {
		if ver > backupVersion {
			return fmt.Errorf("%s is a backup of format %d, from a newer release; this binary reads format %d and older", file, ver, backupVersion)
		}
		return fmt.Errorf("%s: the backup's first line %q is damaged", file, head[:nl])
	}
	if ver != backupVersion {
		return fmt.Errorf("%s is a backup of format %d, from a newer release; this binary reads format %d and older", file, ver, backupVersion)
	}
	b.envelope = ver
	start := int64(nl + 1)

	// The end line is the file's last line.
	tail := make([]byte, min(b.size-start, maxBackupLine))
	if _, err := b.f.ReadAt(tail, b.size-int64(len(tail))); err != nil {
		return fmt.Errorf("reading %s: %w", file, err)
	}
	at := bytes.LastIndex(tail, []byte("\n"+backupEnd+" "))
	if at < 0 || tail[len(tail)-1] != '\n' {
		return fmt.Errorf("%s is %w: the backup's end line is missing (the copy was cut short, or bytes were added after its end)", file, errBackupTruncated)
	}
	endLine := string(tail[at+1 : len(tail)-1])
	var length int64
	var sum string
	if _, err := fmt.Sscanf(endLine, backupEnd+" length=%d sha256=%64s", &length, &sum); err != nil || len(sum) != 64 {
		return fmt.Errorf("%s: the backup's end line %q is damaged", file, endLine)
	}
	end := b.size - int64(len(tail)) + int64(at) // where the end line (with its newline) begins
	if start+length != end {
		return fmt.Errorf("%s: %w: the end line says the snapshot is %d bytes, the file holds %d (truncated, or bytes added or removed)", file, errBackupChecksum, length, end-start)
	}
	h := sha256.New()
	if _, err := io.Copy(h, io.NewSectionReader(b.f, 0, end)); err != nil {
		return fmt.Errorf("reading %s: %w", file, err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != strings.ToLower(sum) {
		return fmt.Errorf("%s: %w: its bytes hash to sha256 %s, the backup recorded %s: the file is damaged; use another copy", file, errBackupChecksum, got, sum)
	}
	b.sum = strings.ToLower(sum)
	b.snap = io.NewSectionReader(b.f, start, length)
	return nil
}

// decode reads the snapshot into a table, checking it decodes whole and
// is at the index the envelope names.
func (b *backupFile) decode(file string) (*fsm.Table, error) {
	t := fsm.New(fsm.Config{})
	if _, err := b.snap.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	if err := t.Restore(bufio.NewReaderSize(b.snap, 1<<20)); err != nil {
		if errors.Is(err, fsm.ErrBadVersion) {
			return nil, fmt.Errorf("%s is a snapshot this binary does not read: %s", file, withoutPkg(err))
		}
		return nil, fmt.Errorf("%s does not decode as a snapshot (damaged, truncated, or not a snapshot saved by \"locknode snapshot save\"): %s", file, withoutPkg(err))
	}
	if b.envelope > 0 && t.AppliedIndex() != b.index {
		return nil, fmt.Errorf("%s: the backup names index %d, its snapshot is at index %d", file, b.index, t.AppliedIndex())
	}
	return t, nil
}

// saveBackup writes the snapshot streamed by s to file in the envelope:
// into a temporary file next to it, checked against the node's checksum
// and then read back and decoded whole from the disk, and only then
// renamed to file, so file is either the old one or a complete backup.
// It returns the snapshot's length and the envelope's SHA-256, and
// whether the node's own checksum was there to check the bytes against.
func saveBackup(file string, s *client.SnapshotStream) (n int64, sum string, nodeChecked bool, err error) {
	dir := filepath.Dir(file)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(file)+".*.tmp")
	if err != nil {
		return 0, "", false, err
	}
	defer func() {
		tmp.Close()
		os.Remove(tmp.Name()) // a no-op once renamed
	}()
	fileSum, snapSum := sha256.New(), sha256.New()
	w := bufio.NewWriterSize(tmp, 1<<20)
	header := fmt.Sprintf("%s %d index=%d term=%d\n", backupMagic, backupVersion, s.Index, s.Term)
	_, _ = io.WriteString(io.MultiWriter(w, fileSum), header)
	n, err = io.Copy(io.MultiWriter(w, fileSum, snapSum), s.Body)
	if err != nil {
		return n, "", false, fmt.Errorf("receiving: %w", err)
	}
	got := hex.EncodeToString(snapSum.Sum(nil))
	if want := s.SHA256(); want != "" {
		if !strings.EqualFold(want, got) {
			return n, "", false, fmt.Errorf("the snapshot was damaged on the way: the node sent sha256 %s, the bytes received hash to %s; try again", want, got)
		}
		nodeChecked = true
	}
	sum = hex.EncodeToString(fileSum.Sum(nil))
	fmt.Fprintf(w, "\n%s length=%d sha256=%s\n", backupEnd, n, sum)
	if err := w.Flush(); err != nil {
		return n, "", false, err
	}
	if err := tmp.Sync(); err != nil {
		return n, "", false, err
	}
	// Read back from the disk: what is renamed is what status and
	// restore will accept.
	b, err := openBackup(tmp.Name())
	if err != nil {
		return n, "", false, fmt.Errorf("the backup written does not read back: %w", err)
	}
	_, err = b.decode(tmp.Name())
	b.Close()
	if err != nil {
		return n, "", false, fmt.Errorf("the snapshot received does not decode: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return n, "", false, err
	}
	if err := os.Rename(tmp.Name(), file); err != nil {
		return n, "", false, err
	}
	if d, err := os.Open(dir); err == nil { // the rename survives a crash
		_ = d.Sync()
		d.Close()
	}
	return n, sum, nodeChecked, nil
}

// restoreBackup checks the backup in file (its checksum, when it has
// one) before anything is written, then prepares dataDir from it
// (cluster.RestoreSnapshotWith, which moves its clock as opt says). A
// failed restore leaves no directory it created behind.
func restoreBackup(file, dataDir string, peers []cluster.Peer, opt cluster.RestoreOptions) (cluster.RestoreResult, error) {
	b, err := openBackup(file)
	if err != nil {
		return cluster.RestoreResult{}, err
	}
	defer b.Close()
	created := missingDirs(dataDir)
	res, err := cluster.RestoreSnapshotWith(dataDir, b.snap, peers, opt)
	if err != nil {
		// RestoreSnapshot empties what it wrote; remove the directories
		// it made, deepest first (Remove keeps anything not empty).
		for _, d := range created {
			_ = os.Remove(d)
		}
		return res, err
	}
	return res, nil
}

// missingDirs lists dir and those of its parents that do not exist,
// deepest first.
func missingDirs(dir string) []string {
	var out []string
	for d := filepath.Clean(dir); ; {
		if _, err := os.Lstat(d); !errors.Is(err, os.ErrNotExist) {
			return out
		}
		out = append(out, d)
		p := filepath.Dir(d)
		if p == d {
			return out
		}
		d = p
	}
}

// savedChecksumNote is save's line about the checksum.
func savedChecksumNote(sum string, nodeChecked bool) string {
	if nodeChecked {
		return "checksum: sha256 " + sum + " recorded in the backup (the snapshot's bytes matched the sha256 the node sent)"
	}
	return "checksum: sha256 " + sum + " recorded in the backup (taken here only: the node sent no sha256 of its own, as an older node or a proxy that drops HTTP trailers does)"
}
