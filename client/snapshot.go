package client

import (
	"context"
	"fmt"
	"io"
	"strconv"

	"github.com/locknode/locknode/httpapi"
)

// Snapshot opens GET /v1/snapshot (admin): a consistent snapshot of the
// cluster's table, streamed, and the applied index it was taken at. The
// caller reads the stream to its end and closes it; a stream cut short
// fails the read (it never just ends early). Any node gives a
// linearizable snapshot; the endpoints are tried in turn.
func (c *Client) Snapshot(ctx context.Context) (body io.ReadCloser, index uint64, err error) {
	resp, err := c.openStream(ctx, httpapi.PathSnapshot)
	if err != nil {
		return nil, 0, err
	}
	index, err = strconv.ParseUint(resp.Header.Get(httpapi.HeaderSnapshotIndex), 10, 64)
	if err != nil {
		resp.Body.Close()
		return nil, 0, fmt.Errorf("snapshot: bad %s header: %w", httpapi.HeaderSnapshotIndex, err)
	}
	return resp.Body, index, nil
}
