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
func (n *Node) WriteSnapshot(ctx context.Context, w io.Writer, start func(index uint64)) error {
	s, err := newFileSnapshot(n.cfg.DataDir)
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
	err = s.writeMapped(ctxWriter{ctx, w})
	if errors.Is(err, errNotMapped) {
		err = s.order.WriteOrderedAt(ctxWriter{ctx, w}, s.f, s.ix)
	}
	if err != nil {
		return fmt.Errorf("cluster: snapshot: %w", err)
	}
	return nil
}

// ctxWriter stops a long write once ctx ends.
type ctxWriter struct {
	ctx context.Context
	w   io.Writer
}

func (c ctxWriter) Write(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.w.Write(p)
}

// RestoreSnapshot prepares dataDir, which must be empty or absent, so
// that a node started on it (Start, without Bootstrap or Join) begins
// from the snapshot read from r, as a member of a cluster whose voters
// are peers. Every node of the new cluster is prepared from the same
// snapshot with the same peers; each then starts with its own ID. The
// snapshot is checked by decoding it whole before anything is kept, and
// its applied index is returned: the new cluster's log continues after
// it, so every fence it grants is above every fence in the snapshot.
func RestoreSnapshot(dataDir string, r io.Reader, peers []Peer) (index uint64, err error) {
	if len(peers) == 0 {
		return 0, errors.New("cluster: restore: peers are required")
	}
	seen := map[string]bool{}
	var conf raft.Configuration
	for _, p := range peers {
		if p.ID == "" || p.Addr == "" || seen[p.ID] {
			return 0, fmt.Errorf("cluster: restore: bad or repeated peer %q=%q", p.ID, p.Addr)
		}
		seen[p.ID] = true
		conf.Servers = append(conf.Servers, raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(p.ID), Address: raft.ServerAddress(p.Addr)})
	}
	if entries, err := os.ReadDir(dataDir); err == nil && len(entries) > 0 {
		return 0, fmt.Errorf("%w: %s", ErrDataDirInUse, dataDir)
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return 0, fmt.Errorf("cluster: restore: %w", err)
	}
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return 0, fmt.Errorf("cluster: restore: %w", err)
	}
	ok := false
	defer func() {
		if !ok { // leave the directory as it was: empty
			entries, _ := os.ReadDir(dataDir)
			for _, e := range entries {
				_ = os.RemoveAll(filepath.Join(dataDir, e.Name()))
			}
		}
	}()

	// A copy in dataDir first: the snapshot is decoded once to check it
	// and learn its index, then copied into raft's snapshot store.
	tmp, err := os.CreateTemp(dataDir, ".restore-*.tmp")
	if err != nil {
		return 0, fmt.Errorf("cluster: restore: %w", err)
	}
	defer func() { tmp.Close(); os.Remove(tmp.Name()) }()
	if _, err := io.Copy(tmp, r); err != nil {
		return 0, fmt.Errorf("cluster: restore: reading the snapshot: %w", err)
	}
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		return 0, fmt.Errorf("cluster: restore: %w", err)
	}
	t := fsm.New(fsm.Config{})
	if err := t.Restore(tmp); err != nil {
		return 0, fmt.Errorf("%w: %v", ErrBadSnapshot, err)
	}
	index = t.AppliedIndex()
	if index == 0 {
		return 0, fmt.Errorf("%w: it has no applied entry", ErrBadSnapshot)
	}
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		return 0, fmt.Errorf("cluster: restore: %w", err)
	}

	store, err := raft.NewFileSnapshotStoreWithLogger(dataDir, 1, hclog.NewNullLogger())
	if err != nil {
		return 0, fmt.Errorf("cluster: restore: snapshot store: %w", err)
	}
	// The transport only encodes the peers into the snapshot's legacy
	// field; an in-memory one does that without a socket.
	_, trans := raft.NewInmemTransport("")
	defer trans.Close()
	// Term 1: the new cluster's first election is term 2 on every node,
	// whatever term the old cluster had reached.
	sink, err := store.Create(raft.SnapshotVersionMax, index, 1, conf, index, trans)
	if err != nil {
		return 0, fmt.Errorf("cluster: restore: %w", err)
	}
	if _, err := io.Copy(sink, tmp); err != nil {
		_ = sink.Cancel()
		return 0, fmt.Errorf("cluster: restore: %w", err)
	}
	if err := sink.Close(); err != nil {
		return 0, fmt.Errorf("cluster: restore: %w", err)
	}
	ok = true
	return index, nil
}

// SnapshotTerm is the raft term of the entry at index (httpapi's
// SnapshotTermer), recorded in backups next to the index: from the log,
// or from raft's last snapshot when the log was compacted up to it; 0
// when neither has it.
func (n *Node) SnapshotTerm(index uint64) uint64 {
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
