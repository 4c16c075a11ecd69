package client

import (
	"net/http"
	"net/url"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"

	"github.com/locknode/locknode/api"
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
	admin     // members, status, readiness, snapshots, upgrades (admin.go)
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
	c.admin = admin{caller: &c.caller}
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

// Limits returns the request limits the client checks before sending
// (Config.Limits with defaults).
func (c *Client) Limits() api.Limits { return c.cfg.Limits }
