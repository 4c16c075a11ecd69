package client

import (
	"context"
	"net/http"
	"net/url"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/wire"
)

// Client talks to a locknode cluster over HTTP. It is safe for concurrent
// use; share one per process (coalescing works per Client).
type Client struct {
	// The Client is composed of parts, each a type with its own files,
	// that share one caller (endpoints, fail-over, retries); the
	// methods of *Client are theirs, promoted.
	caller
	leases    // Acquire, TryAcquire, Release, Extend, FenceCheck (leases.go)
	handles   // Lock, TryLock and their coalescing (lock.go, coalesce.go)
	sessions  // OpenSession, KeepAlive, CloseSession, NewSession (session.go)
	elections // Campaign, Resign, Proclaim, Observe, Elect (election.go)
	inspector // Inspect, List, Watch (watch.go)
}

// caller sends requests to the cluster's endpoints with fail-over and
// retries (transport.go). Every part of a Client sends through the
// Client's one caller, so they share its choice of endpoint.
type caller struct {
	cfg Config
	log hclog.Logger
	cur atomic.Int32 // index of the endpoint that answered last

	eps []endpoint // parsed cfg.Endpoints, same order
	// authz is the Authorization header of every request (nil: none),
	// built once.
	authz []string
}

var _ api.Locker = (*Client)(nil)

// New returns a Client for cfg.
func New(cfg Config) (*Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	c := &Client{}
	c.caller = caller{cfg: cfg, log: cfg.Logger}
	c.leases = leases{caller: &c.caller}
	c.sessions = sessions{caller: &c.caller}
	c.elections = elections{caller: &c.caller}
	c.inspector = inspector{caller: &c.caller}
	c.handles = handles{leases: &c.leases, coalesced: map[coalesceKey]*coalescer{}}
	for _, e := range cfg.Endpoints {
		c.eps = append(c.eps, parseEndpoint(e))
	}
	if cfg.Username != "" || cfg.Password != "" {
		r := http.Request{Header: http.Header{}}
		r.SetBasicAuth(cfg.Username, cfg.Password)
		c.authz = r.Header["Authorization"]
	}
	return c, nil
}

func jsonBody(v any) func() any { return func() any { return v } }

// escapeKey escapes a key as one path segment. "." and ".." are escaped
// too, or the server's path cleaning would eat them.
func escapeKey(key string) string {
	switch key {
	case ".":
		return "%2E"
	case "..":
		return "%2E%2E"
	}
	return url.PathEscape(key)
}

// AddVoter asks the cluster to add server id, reachable at its raft
// address addr, as a voter (POST /v1/members). The leader first checks
// that addr answers the peer handshake and refuses it otherwise
// (api.ErrBadRequest). Repeating it is harmless.
func (c *Client) AddVoter(ctx context.Context, id, addr string) error {
	_, err := c.do(ctx, call{op: "add voter", method: http.MethodPost, path: wire.PathMembers,
		body: jsonBody(wire.MemberRequest{ID: id, Address: addr})})
	return err
}

// AddVoterForce is AddVoter without the leader's check that addr
// answers the peer handshake, for a node that is not up yet. Only the
// leader takes it; other nodes answer 503 and the client tries its next
// endpoint, so list the leader among them.
func (c *Client) AddVoterForce(ctx context.Context, id, addr string) error {
	_, err := c.do(ctx, call{op: "add voter", method: http.MethodPost, path: wire.PathMembers,
		body: jsonBody(wire.MemberRequest{ID: id, Address: addr, Force: true})})
	return err
}

// RemoveServer asks the cluster to remove server id (DELETE /v1/members/{id}).
// An id that is not a member is refused (api.ErrNotFound).
func (c *Client) RemoveServer(ctx context.Context, id string) error {
	_, err := c.do(ctx, call{op: "remove server", method: http.MethodDelete, path: wire.PathMembers + "/" + url.PathEscape(id)})
	return err
}

// Status implements api.Locker (the status of whichever node answers).
func (c *Client) Status(ctx context.Context) (api.Status, error) {
	var st api.Status
	_, err := c.do(ctx, call{op: "status", method: http.MethodGet, path: wire.PathStatus, out: &st})
	return st, err
}

// Limits returns the request limits the client checks before sending
// (Config.Limits with defaults).
func (c *Client) Limits() api.Limits { return c.cfg.Limits }
