package client

import (
	"context"
	"net/http"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/httpapi"
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
func (c *Client) TransferLeadership(ctx context.Context, id string) (api.TransferResult, error) {
	var res api.TransferResult
	_, err := c.do(ctx, call{op: "transfer leadership", method: http.MethodPost, path: httpapi.PathTransferLeader,
		body: jsonBody(api.TransferRequest{ID: id}), out: &res})
	return res, err
}
