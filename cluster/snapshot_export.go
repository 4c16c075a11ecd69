package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/locknode/locknode/cluster/lockservice"
	"github.com/locknode/locknode/fsm"
)

// Backup and restore: a consistent snapshot of the table taken from a
// running cluster (WriteSnapshot, served by GET /v1/snapshot), and a data
// directory prepared from one so that a new cluster starts with every
// lock, fence, session, waiter, value and script of the old one
// (RestoreSnapshot, `locknode snapshot restore`).

var (
	// ErrDataDirInUse: RestoreSnapshot was given a data directory that
	// already holds something; a restore never overwrites a node's state.
	ErrDataDirInUse = errors.New("cluster: data directory is not empty")
	// ErrBadSnapshot: the file is not a table snapshot this version reads.
	ErrBadSnapshot = errors.New("cluster: not a valid snapshot")
)

// WriteSnapshot writes the table as of a linearizable read (this node has
// applied everything the leader had committed when the call began) to w,
// in the fsm snapshot format. The table is encoded into unlinked files in
// DataDir under the read lock, as for raft's own snapshots (snapshot.go),
// so applies wait only for the encoding, never for w; start is called
// with the snapshot's applied index once that is done and before the
// first byte goes to w. Cancelling ctx stops the wait for the read point
// and the writing.
func (n *raftReplica) WriteSnapshot(ctx context.Context, w io.Writer, start func(index uint64)) error {
	s, err := newFileSnapshot(n.cfg.Disk, n.cfg.DataDir)
	if err != nil {
		return fmt.Errorf("cluster: snapshot: %w", err)
	}
	defer s.Release()
	var idx uint64
	var encErr error
	if err := n.Read(ctx, false, func(t *fsm.Table, _ int64) {
		encErr = s.encode(t.SnapshotUnordered)
		idx = t.AppliedIndex()
	}); err != nil {
		return err
	}
	if encErr != nil {
		return fmt.Errorf("cluster: snapshot: %w", encErr)
	}
	n.log.Info("snapshot exported", "index", idx, "bytes", s.order.Size())
	if start != nil {
		start(idx)
	}
	err = s.writeMapped(lockservice.ContextWriter{Ctx: ctx, W: w})
	if errors.Is(err, errNotMapped) {
		err = s.order.WriteOrderedAt(lockservice.ContextWriter{Ctx: ctx, W: w}, s.f, s.ix)
	}
	if err != nil {
		return fmt.Errorf("cluster: snapshot: %w", err)
	}
	return nil
}

// RestoreSnapshot prepares dataDir, which must be empty or absent, so
// that a node started on it (Start, without Bootstrap or Join) begins
// from the snapshot read from r, as a member of a cluster whose voters
// are peers, with the snapshot's clock (RestoreSnapshotWith re-bases it).
func RestoreSnapshot(dataDir string, r io.Reader, peers []Peer) (index uint64, err error) {
	res, err := RestoreSnapshotWith(dataDir, r, peers, RestoreOptions{})
	return res.Index, err
}

// RestoreOptions are the choices of a restore beyond its peers.
type RestoreOptions struct {
	// ClockBase is the cluster time, in Unix ms, the restored cluster
	// starts from; 0 keeps the snapshot's own time. When it is later than
	// the snapshot's time, every absolute time in the snapshot is moved
	// forward by the difference (fsm.Table.Rebase), so the restored
	// cluster's clock (RESP TIME, PXAT) follows wall time while every
	// lease, wait, session and value keeps exactly the time it had left
	// when the backup was taken. An earlier one is ignored: the clock never
	// moves back. Every node of the new cluster must be restored with the
	// same ClockBase, or their tables would differ.
	ClockBase int64
}

// RestoreResult says what a restore prepared.
type RestoreResult struct {
	Index uint64 // the snapshot's applied index; the new log continues after it
	// From is the snapshot's cluster time, To the restored one (Unix ms);
	// To - From is how far every absolute time was moved.
	From, To int64
}

// RestoreSnapshotWith prepares dataDir, which must be empty or absent,
// so that a node started on it (Start, without Bootstrap or Join) begins
// from the snapshot read from r, as a member of a cluster whose voters
// are peers. Every node of the new cluster is prepared from the same
// snapshot with the same peers and options; each then starts with its
// own ID. The snapshot is checked by decoding it whole before anything
// is kept, and its applied index is returned: the new cluster's log
// continues after it, so every fence it grants is above every fence in
// the snapshot. On failure dataDir is as it was: a directory the restore
// created is removed, one that existed is left empty.
func RestoreSnapshotWith(dataDir string, r io.Reader, peers []Peer, opt RestoreOptions) (res RestoreResult, err error) {
	conf, err := restoreConfiguration(peers)
	if err != nil {
		return res, err
	}
	if opt.ClockBase < 0 {
		return res, fmt.Errorf("cluster: restore: clock base %d is negative", opt.ClockBase)
	}
	if entries, err := os.ReadDir(dataDir); err == nil && len(entries) > 0 {
		return res, fmt.Errorf("%w: %s", ErrDataDirInUse, dataDir)
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return res, fmt.Errorf("cluster: restore: %w", err)
	}
	created, err := firstMissing(dataDir)
	if err != nil {
		return res, fmt.Errorf("cluster: restore: %w", err)
	}
	ok := false
	defer func() {
		if ok {
			return
		}
		if created != "" { // it did not exist: nothing of it is left
			_ = os.RemoveAll(created)
			return
		}
		entries, _ := os.ReadDir(dataDir) // it existed, empty: empty it again
		for _, e := range entries {
			_ = os.RemoveAll(filepath.Join(dataDir, e.Name()))
		}
	}()
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return res, fmt.Errorf("cluster: restore: %w", err)
	}

	// A copy in dataDir first: the snapshot is decoded once to check it
	// and learn its index, then copied into raft's snapshot store.
	tmp, err := os.CreateTemp(dataDir, ".restore-*.tmp")
	if err != nil {
		return res, fmt.Errorf("cluster: restore: %w", err)
	}
	defer func() { tmp.Close(); os.Remove(tmp.Name()) }()
	if _, err := io.Copy(tmp, r); err != nil {
		return res, fmt.Errorf("cluster: restore: reading the snapshot: %w", err)
	}
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		return res, fmt.Errorf("cluster: restore: %w", err)
	}
	t := fsm.New(fsm.Config{})
	if err := t.Restore(tmp); err != nil {
		return res, fmt.Errorf("%w: %v", ErrBadSnapshot, err)
	}
	res.Index, res.From, res.To = t.AppliedIndex(), t.Now(), t.Now()
	if res.Index == 0 {
		return res, fmt.Errorf("%w: it has no applied entry", ErrBadSnapshot)
	}
	// write puts the snapshot into raft's sink: the file as it came, or
	// the re-based table encoded anew.
	write := func(w io.Writer) error {
		if _, err := tmp.Seek(0, io.SeekStart); err != nil {
			return err
		}
		_, err := io.Copy(w, tmp)
		return err
	}
	if opt.ClockBase > res.From {
		if err := t.Rebase(opt.ClockBase - res.From); err != nil {
			return res, fmt.Errorf("cluster: restore: clock base %d: %w", opt.ClockBase, err)
		}
		res.To = t.Now()
		write = t.Snapshot
	}

	if err := storeRestored(dataDir, conf, res.Index, write); err != nil {
		return res, err
	}
	ok = true
	return res, nil
}

// restoreConfiguration is the raft configuration of a restored cluster
// whose voters are peers.
func restoreConfiguration(peers []Peer) (raft.Configuration, error) {
	var conf raft.Configuration
	if len(peers) == 0 {
		return conf, errors.New("cluster: restore: peers are required")
	}
	seen := map[string]bool{}
	for _, p := range peers {
		if p.ID == "" || p.Addr == "" || seen[p.ID] {
			return conf, fmt.Errorf("cluster: restore: bad or repeated peer %q=%q", p.ID, p.Addr)
		}
		seen[p.ID] = true
		conf.Servers = append(conf.Servers, raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(p.ID), Address: raft.ServerAddress(p.Addr)})
	}
	return conf, nil
}

// storeRestored puts a snapshot at index, written by write, into raft's
// snapshot store in dataDir, with conf as its configuration.
func storeRestored(dataDir string, conf raft.Configuration, index uint64, write func(io.Writer) error) error {
	store, err := raft.NewFileSnapshotStoreWithLogger(dataDir, 1, hclog.NewNullLogger())
	if err != nil {
		return fmt.Errorf("cluster: restore: snapshot store: %w", err)
	}
	// The transport only encodes the peers into the snapshot's legacy
	// field; an in-memory one does that without a socket.
	_, trans := raft.NewInmemTransport("")
	defer trans.Close()
	// Term 1: the new cluster's first election is term 2 on every node,
	// whatever term the old cluster had reached.
	sink, err := store.Create(raft.SnapshotVersionMax, index, 1, conf, index, trans)
	if err != nil {
		return fmt.Errorf("cluster: restore: %w", err)
	}
	if err := write(sink); err != nil {
		_ = sink.Cancel()
		return fmt.Errorf("cluster: restore: %w", err)
	}
	if err := sink.Close(); err != nil {
		return fmt.Errorf("cluster: restore: %w", err)
	}
	return nil
}

// firstMissing returns the outermost directory of dir's path that does
// not exist yet (what MkdirAll would create first), or "" when dir
// exists.
func firstMissing(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	missing := ""
	for p := abs; ; p = filepath.Dir(p) {
		if _, err := os.Stat(p); err == nil {
			return missing, nil
		} else if !errors.Is(err, os.ErrNotExist) {
			return "", err
		}
		missing = p
		if filepath.Dir(p) == p {
			return missing, nil
		}
	}
}

// SnapshotTerm is the raft term of the entry at index (httpapi's
// SnapshotTermer), recorded in backups next to the index: from the log,
// or from raft's last snapshot when the log was compacted up to it; 0
// when neither has it.
func (n *raftReplica) SnapshotTerm(index uint64) uint64 {
	if index == 0 || n.logs == nil {
		return 0
	}
	var l raft.Log
	if err := n.logs.GetLog(index, &l); err == nil && l.Index == index {
		return l.Term
	}
	if n.raft == nil {
		return 0
	}
	st := n.raft.Stats()
	if st["last_snapshot_index"] == strconv.FormatUint(index, 10) {
		if term, err := strconv.ParseUint(st["last_snapshot_term"], 10, 64); err == nil {
			return term
		}
	}
	return 0
}
