package client

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/internal/oteltrace"
	"github.com/locknode/locknode/wire"
)

// Client talks to a locknode cluster over HTTP. It is safe for concurrent
// use; share one per process (coalescing works per Client).
type Client struct {
	// The Client is composed of parts, each a type with its own files,
	// that share one caller (endpoints, fail-over, retries); the
	// methods of *Client are theirs, promoted.
	caller
	leases   // Acquire, TryAcquire, Release, Extend, FenceCheck (leases.go)
	handles  // Lock, TryLock and their coalescing (lock.go, coalesce.go)
	sessions // OpenSession, KeepAlive, CloseSession, NewSession (session.go)
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

// Inspect implements api.Locker over GET /v1/locks/{key}.
func (c *Client) Inspect(ctx context.Context, key string, opts api.ReadOptions) (api.LockInfo, error) {
	if err := c.cfg.Limits.CheckKey(key); err != nil {
		return api.LockInfo{}, err
	}
	path := wire.PathLockPrefix + escapeKey(key)
	if opts.Stale {
		path += "?stale=true"
	}
	var info api.LockInfo
	_, err := c.do(ctx, call{op: "inspect", method: http.MethodGet, path: path, out: &info})
	return info, err
}

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

// List implements api.Locker over GET /v1/locks.
func (c *Client) List(ctx context.Context, req api.ListRequest) (api.ListResult, error) {
	if err := req.Validate(c.cfg.Limits); err != nil {
		return api.ListResult{}, err
	}
	q := url.Values{}
	if req.Prefix != "" {
		q.Set("prefix", req.Prefix)
	}
	if req.After != "" {
		q.Set("after", req.After)
	}
	if req.Limit != 0 {
		q.Set("limit", strconv.Itoa(req.Limit))
	}
	if req.Stale {
		q.Set("stale", "true")
	}
	path := wire.PathLocks
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var res api.ListResult
	_, err := c.do(ctx, call{op: "list", method: http.MethodGet, path: path, out: &res})
	return res, err
}

// Campaign implements api.Locker: a long poll until req.Value leads
// req.Election or ctx ends. The campaign's token is chosen here when
// req.Token is empty and sent with every retry, so retrying is harmless
// (campaigning again with the same token while leading answers the same
// leadership) and never makes the caller its own rival.
func (c *Client) Campaign(ctx context.Context, req api.CampaignRequest) (_ api.Leader, rerr error) {
	ctx, sp := startSpan(ctx, "locknode.Campaign", oteltrace.AttrElection.String(req.Election))
	defer func() { sp.end(rerr) }()
	if err := req.Validate(c.cfg.Limits); err != nil {
		return api.Leader{}, err
	}
	if req.Token == "" {
		var b [16]byte
		if _, err := rand.Read(b[:]); err != nil {
			return api.Leader{}, fmt.Errorf("campaign token: %w", err)
		}
		req.Token = hex.EncodeToString(b[:])
	}
	for {
		var ld api.Leader
		// Each request is bounded (like an acquire without wait), so a
		// silently dead connection is noticed.
		_, err := c.do(ctx, call{op: "campaign", method: http.MethodPost,
			path: wire.PathElections + url.PathEscape(req.Election) + "/campaign",
			body: jsonBody(wire.CampaignRequest{Value: req.Value, Session: req.Session, Token: req.Token}),
			wait: api.MaxWait, out: &ld})
		var e *Error
		if errors.As(err, &e) || err == nil || ctx.Err() != nil {
			return ld, err
		}
		// Every endpoint failed at the transport level: keep campaigning
		// until ctx ends, as the caller asked to block.
		c.log.Warn("campaign: no endpoint reachable, retrying", "election", req.Election, "error", err)
	}
}

// Resign implements api.Locker.
func (c *Client) Resign(ctx context.Context, leader api.Leader) (rerr error) {
	ctx, sp := startSpan(ctx, "locknode.Resign", oteltrace.AttrElection.String(leader.Election))
	defer func() { sp.end(rerr) }()
	rreq := api.ResignRequest{Election: leader.Election, Value: leader.Value, Token: leader.Token}
	if err := rreq.Validate(c.cfg.Limits); err != nil {
		return err
	}
	_, err := c.do(ctx, call{op: "resign", method: http.MethodPost,
		path: wire.PathElections + url.PathEscape(leader.Election) + "/resign",
		body: jsonBody(wire.ResignRequest{Value: leader.Value, Token: leader.Token})})
	return err
}

// Proclaim implements api.Locker.
func (c *Client) Proclaim(ctx context.Context, leader api.Leader, value string) (_ api.Leader, rerr error) {
	ctx, sp := startSpan(ctx, "locknode.Proclaim", oteltrace.AttrElection.String(leader.Election))
	defer func() { sp.end(rerr) }()
	preq := api.ProclaimRequest{Election: leader.Election, Value: leader.Value, Token: leader.Token, NewValue: value}
	if err := preq.Validate(c.cfg.Limits); err != nil {
		return api.Leader{}, err
	}
	var ld api.Leader
	_, err := c.do(ctx, call{op: "proclaim", method: http.MethodPost,
		path: wire.PathElections + url.PathEscape(leader.Election) + "/proclaim",
		body: jsonBody(wire.ProclaimRequest{Value: leader.Value, Token: leader.Token, NewValue: value}), out: &ld})
	if err != nil {
		return api.Leader{}, err
	}
	return ld, nil
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

// Observe implements api.Locker over the GET .../observe stream. When a
// stream breaks (its node died) it reconnects to the next endpoint with
// back-off and carries on; a reconnect may repeat the current leader,
// which is dropped if it equals the last one delivered. The channel is
// closed when ctx ends. The first connection's failure is returned.
func (c *Client) Observe(ctx context.Context, election string) (<-chan api.Leader, error) {
	path := wire.PathElections + url.PathEscape(election) + "/observe"
	resp, err := c.openStream(ctx, path)
	if err != nil {
		return nil, err
	}
	out := make(chan api.Leader)
	// Ends when ctx ends (every blocking step selects on it); closes out.
	go func() {
		defer close(out)
		var last api.Leader
		delivered := false
		for round := 1; ; round++ {
			if resp != nil {
				sc := bufio.NewScanner(resp.Body)
				for sc.Scan() {
					var ld api.Leader
					if json.Unmarshal(sc.Bytes(), &ld) != nil {
						continue
					}
					if delivered && ld == last {
						continue
					}
					select {
					case out <- ld:
						last, delivered, round = ld, true, 1
					case <-ctx.Done():
						resp.Body.Close()
						return
					}
				}
				resp.Body.Close()
			}
			if ctx.Err() != nil {
				return
			}
			t := time.NewTimer(c.cfg.Retry.backoff(round))
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return
			}
			resp, _ = c.openStream(ctx, path)
		}
	}()
	return out, nil
}

// Limits returns the request limits the client checks before sending
// (Config.Limits with defaults).
func (c *Client) Limits() api.Limits { return c.cfg.Limits }
