package client

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/locknode/locknode/wire"
)

// Snapshot opens GET /v1/snapshot (admin): a consistent snapshot of the
// cluster's table, streamed, and the applied index it was taken at. The
// caller reads the stream to its end and closes it; a stream cut short
// fails the read (it never just ends early). Any node gives a
// linearizable snapshot; the endpoints are tried in turn.
func (c *admin) Snapshot(ctx context.Context) (body io.ReadCloser, index uint64, err error) {
	s, err := c.SnapshotStream(ctx)
	if err != nil {
		return nil, 0, err
	}
	return s.Body, s.Index, nil
}

// SnapshotStream is an open GET /v1/snapshot with what the node said
// of it.
type SnapshotStream struct {
	// Body is the snapshot; read it to its end and close it.
	Body io.ReadCloser
	// Index is the applied index the snapshot was taken at.
	Index uint64
	// Term is the raft term of the entry at Index; 0 when the node did
	// not say (an older node).
	Term uint64
	resp *http.Response
}

// SHA256 is the node's SHA-256 (hex) of the stream's bytes, sent after
// them as an HTTP trailer: known only once Body was read to its end, and
// "" when the node sent none (an older node, or a proxy on the way that
// drops trailers).
func (s *SnapshotStream) SHA256() string {
	if s.resp == nil {
		return ""
	}
	return s.resp.Trailer.Get(wire.TrailerSnapshotSHA256)
}

// SnapshotStream is Snapshot with the term and the node's checksum of
// the stream (SnapshotStream.SHA256).
func (c *admin) SnapshotStream(ctx context.Context) (*SnapshotStream, error) {
	resp, err := c.openStream(ctx, wire.PathSnapshot)
	if err != nil {
		return nil, err
	}
	s := &SnapshotStream{Body: resp.Body, resp: resp}
	s.Index, err = strconv.ParseUint(resp.Header.Get(wire.HeaderSnapshotIndex), 10, 64)
	if err != nil {
		resp.Body.Close()
		return nil, fmt.Errorf("snapshot: bad %s header: %w", wire.HeaderSnapshotIndex, err)
	}
	if v := resp.Header.Get(wire.HeaderSnapshotTerm); v != "" {
		s.Term, err = strconv.ParseUint(v, 10, 64)
		if err != nil {
			resp.Body.Close()
			return nil, fmt.Errorf("snapshot: bad %s header: %w", wire.HeaderSnapshotTerm, err)
		}
	}
	return s, nil
}
