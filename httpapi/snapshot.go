package httpapi

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"io"
	"net/http"
	"strconv"

	"github.com/locknode/locknode/wire"
)

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
		h.Set(wire.HeaderSnapshotIndex, strconv.FormatUint(index, 10))
		if st, ok := sn.(SnapshotTermer); ok {
			if term := st.SnapshotTerm(index); term > 0 {
				h.Set(wire.HeaderSnapshotTerm, strconv.FormatUint(term, 10))
			}
		}
		h.Set("Trailer", wire.TrailerSnapshotSHA256)
		w.WriteHeader(http.StatusOK)
	})
	switch {
	case err == nil:
		w.Header().Set(wire.TrailerSnapshotSHA256, hex.EncodeToString(hw.h.Sum(nil)))
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
