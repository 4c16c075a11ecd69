package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/wire"
)

// admin is the part of a Client that runs the cluster rather than its
// locks: membership, leadership transfer, status and readiness,
// snapshots (snapshot.go) and cluster upgrades (upgrade.go).
type admin struct {
	*caller
}

// AddVoter asks the cluster to add server id, reachable at its raft
// address addr, as a voter (POST /v1/members). The leader first checks
// that addr answers the peer handshake and refuses it otherwise
// (api.ErrBadRequest). Repeating it is harmless.
func (c *admin) AddVoter(ctx context.Context, id, addr string) error {
	_, err := c.do(ctx, call{op: "add voter", method: http.MethodPost, path: wire.PathMembers,
		body: jsonBody(wire.MemberRequest{ID: id, Address: addr})})
	return err
}

// AddVoterForce is AddVoter without the leader's check that addr
// answers the peer handshake, for a node that is not up yet. Only the
// leader takes it; other nodes answer 503 and the client tries its next
// endpoint, so list the leader among them.
func (c *admin) AddVoterForce(ctx context.Context, id, addr string) error {
	_, err := c.do(ctx, call{op: "add voter", method: http.MethodPost, path: wire.PathMembers,
		body: jsonBody(wire.MemberRequest{ID: id, Address: addr, Force: true})})
	return err
}

// RemoveServer asks the cluster to remove server id (DELETE /v1/members/{id}).
// An id that is not a member is refused (api.ErrNotFound).
func (c *admin) RemoveServer(ctx context.Context, id string) error {
	_, err := c.do(ctx, call{op: "remove server", method: http.MethodDelete, path: wire.PathMembers + "/" + url.PathEscape(id)})
	return err
}

// Status implements api.Locker (the status of whichever node answers).
func (c *admin) Status(ctx context.Context) (api.Status, error) {
	var st api.Status
	_, err := c.do(ctx, call{op: "status", method: http.MethodGet, path: wire.PathStatus, out: &st})
	return st, err
}
