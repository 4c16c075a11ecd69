package httpapi

import (
	"context"
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

// Snapshotter is a Locker that can export its state (cluster.Node).
type Snapshotter interface {
	// WriteSnapshot writes a linearizable snapshot to w, calling start
	// with its index before the first byte. An error before start is
	// answered as any request's; one after it cuts the stream.
	WriteSnapshot(ctx context.Context, w io.Writer, start func(index uint64)) error
}

func (s *server) snapshot(w http.ResponseWriter, r *http.Request, sn Snapshotter) {
	started := false
	err := sn.WriteSnapshot(r.Context(), w, func(index uint64) {
		started = true
		h := w.Header()
		h.Set("Content-Type", "application/octet-stream")
		h.Set(HeaderSnapshotIndex, strconv.FormatUint(index, 10))
		w.WriteHeader(http.StatusOK)
	})
	switch {
	case err == nil:
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
