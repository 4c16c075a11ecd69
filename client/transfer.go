package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/wire"
)

// TransferLeadership asks the leader to hand leadership to voter id, or
// to the voter raft picks when id is empty (POST
// /v1/members/transfer-leader), and returns the new leader once the old
// one has heard of it. Only the leader takes it: other nodes answer 503
// naming the leader, and the client tries its next endpoint, so list the
// leader among them (`locknode members transfer-leader` finds it through
// GET /v1/status). An id that is no member is refused with
// api.ErrNotFound, a non-voter with api.ErrBadRequest, a transfer that
// did not complete with api.ErrWaitTimeout.
func (c *admin) TransferLeadership(ctx context.Context, id string) (api.TransferResult, error) {
	var res api.TransferResult
	_, err := c.do(ctx, call{op: "transfer leadership", method: http.MethodPost, path: wire.PathTransferLeader,
		body: jsonBody(api.TransferRequest{ID: id}), out: &res})
	return res, err
}

// ErrNotReady: a node answered its readiness probe with "not ready"; the
// error's text carries the node's reasons.
var ErrNotReady = errors.New("client: node not ready")

// Ready asks the client's current endpoint for its readiness (GET
// /readyz) once, without fail-over or retries: it describes that one
// node. It returns nil when the node is ready, an error wrapping
// ErrNotReady with the node's reasons when it answers 503, and the
// transport's error when it does not answer.
func (c *admin) Ready(ctx context.Context) error {
	ep := c.cfg.Endpoints[int(c.cur.Load())%len(c.cfg.Endpoints)]
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, ep+wire.PathReadyz, nil)
	if err != nil {
		return err
	}
	if c.authz != nil {
		req.Header["Authorization"] = c.authz
	}
	resp, err := c.cfg.HTTPClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	text := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(string(body)), "not ready:"))
	switch {
	case resp.StatusCode == http.StatusOK:
		return nil
	case resp.StatusCode == http.StatusServiceUnavailable:
		return fmt.Errorf("%w: %s", ErrNotReady, text)
	}
	return fmt.Errorf("readiness probe answered %d: %s", resp.StatusCode, text)
}
