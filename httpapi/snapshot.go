package httpapi

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"io"
	"net/http"
	"strconv"
)

// PathSnapshot streams a consistent snapshot of the whole table (admin
// only): the backup `locknode snapshot save` writes and `locknode
// snapshot restore` starts a new cluster from.
const PathSnapshot = "/v1/snapshot"

// HeaderSnapshotIndex is the response header of GET /v1/snapshot that
// carries the applied index the snapshot was taken at.
const HeaderSnapshotIndex = "Locknode-Snapshot-Index"

// HeaderSnapshotTerm is the response header of GET /v1/snapshot that
// carries the raft term of the entry at the snapshot's index, when the
// node knows it (absent from a node without raft, or an older one).
const HeaderSnapshotTerm = "Locknode-Snapshot-Term"

// TrailerSnapshotSHA256 is the HTTP trailer of GET /v1/snapshot: the
// SHA-256 (hex) of the stream's bytes, computed by the node as it sent
// them, so that a client can tell a stream damaged on the way from a
// whole one. It is sent only after the last byte of a whole stream.
const TrailerSnapshotSHA256 = "Locknode-Snapshot-Sha256"

// Snapshotter is a Locker that can export its state (cluster.Node).
type Snapshotter interface {
	// WriteSnapshot writes a linearizable snapshot to w, calling start
	// with its index before the first byte. An error before start is
	// answered as any request's; one after it cuts the stream.
	WriteSnapshot(ctx context.Context, w io.Writer, start func(index uint64)) error
}

// SnapshotTermer is a Snapshotter that knows the raft term of the
// entry at an index (cluster.Node); 0 means unknown.
type SnapshotTermer interface {
	SnapshotTerm(index uint64) uint64
}

// hashWriter hashes what it passes on.
type hashWriter struct {
	w io.Writer
	h hash.Hash
}

func (hw hashWriter) Write(p []byte) (int, error) {
	n, err := hw.w.Write(p)
	hw.h.Write(p[:n])
	return n, err
}

func (s *server) snapshot(w http.ResponseWriter, r *http.Request, sn Snapshotter) {
	started := false
	hw := hashWriter{w: w, h: sha256.New()}
	err := sn.WriteSnapshot(r.Context(), hw, func(index uint64) {
		started = true
		h := w.Header()
		h.Set("Content-Type", "application/octet-stream")
		h.Set(HeaderSnapshotIndex, strconv.FormatUint(index, 10))
		if st, ok := sn.(SnapshotTermer); ok {
			if term := st.SnapshotTerm(index); term > 0 {
				h.Set(HeaderSnapshotTerm, strconv.FormatUint(term, 10))
			}
		}
		h.Set("Trailer", TrailerSnapshotSHA256)
		w.WriteHeader(http.StatusOK)
	})
	switch {
	case err == nil:
		w.Header().Set(TrailerSnapshotSHA256, hex.EncodeToString(hw.h.Sum(nil)))
		s.cfg.Logger.Info("snapshot streamed", "user", userName(r), "remote", r.RemoteAddr)
	case !started:
		s.fail(w, r, err)
	default:
		// The status line is out: only a cut connection tells the client
		// the stream is not whole (it is chunked, without a length).
		s.cfg.Logger.Warn("snapshot stream failed", "remote", r.RemoteAddr, "error", err)
		panic(http.ErrAbortHandler)
	}
}
