package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/locknode/locknode/auth"
	"github.com/locknode/locknode/cluster"
	"github.com/locknode/locknode/httpapi"
	"github.com/locknode/locknode/redisbridge"
	"github.com/locknode/locknode/redisbridge/mirror"
)

// Config is everything one node serves. Zero fields take the default
// noted on each (DefaultConfig returns them); Start validates the result.
type Config struct {
	// Cluster configures the raft node (ID and DataDir are required).
	// When Cluster.Transport is nil, Start opens the peer port itself on
	// Cluster.BindAddr with Listen and dials peers with Dial, honouring
	// the peer fields (Advertise, PeerServerTLS/PeerClientTLS,
	// PeerHandshakeTimeout, PeerMaxConns).
	Cluster cluster.Config

	// HTTPAddr is the listen address of the HTTP API, /metrics and the
	// dashboard; RESPAddr that of the Redis protocol bridge. Empty: that
	// port is not served. Default (DefaultConfig): "127.0.0.1:8080" and
	// "127.0.0.1:6379", the flags' defaults; the zero Config serves
	// neither.
	HTTPAddr string
	RESPAddr string
	// HTTPAdvertise and RESPAdvertise are the addresses other members
	// hand to clients (SENTINEL, INFO, the dashboard); default: the bound
	// address, with the raft address's host when bound to a wildcard.
	HTTPAdvertise string
	RESPAdvertise string

	// HTTP and RESP are the two servers' configs: their limits, timeouts
	// and options. Start fills the fields it wires itself (the logger,
	// users, audit, throttle, metrics, readiness, status and peers hooks;
	// RESP.Addr and NodeID), so only the others are read. Zero fields take
	// the packages' defaults.
	HTTP httpapi.Config
	RESP redisbridge.Config
	// AuthThrottle is the throttle of failed authentications that the two
	// ports share, so a source guessing passwords is counted across them
	// (Logger is set by Start). Zero fields: auth's defaults.
	AuthThrottle auth.ThrottleConfig
	// TLS, when set, serves HTTP (https) and RESP over TLS with it.
	// Default: plain TCP.
	TLS *tls.Config
	// Users, when set, authenticates every HTTP and RESP request.
	// Default: open, no users.
	Users *auth.Store
	// Audit logs and counts forced releases, membership changes and
	// refused requests on the client ports; its collectors join the
	// node's metrics. Nil: not audited. (Cluster.Audit is the peer
	// port's; a process passes the same one to both.)
	Audit *auth.Audit

	// Mirror, when set, mirrors the lock table into that Redis (every
	// node runs a mirror; only the leader's writes). Default: none.
	Mirror *mirror.Config

	// Version and Commit describe the running build: GET /v1/status's
	// release and the labels of locknode_build_info. Default: "(devel)"
	// and "unknown".
	Version, Commit string

	// Listen opens the HTTP and RESP listeners, and the peer port's when
	// Cluster.Transport is nil. Default: net.Listen. A simulated network
	// or a test that wraps every accepted connection plugs in here.
	Listen func(network, addr string) (net.Listener, error)
	// Dial opens the peer port's outgoing connections when
	// Cluster.Transport is nil. Default: a net.Dialer.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)

	// ShutdownTimeout bounds how long Close lets HTTP requests in flight
	// finish before their connections are cut. Default 5s.
	ShutdownTimeout time.Duration

	// Logger receives the servers' and the mirror's logs (named "http",
	// "resp", "auth"). Default: a null logger. The raft node logs to
	// Cluster.Logger.
	Logger hclog.Logger
}

// Defaults of Config.
const (
	DefaultHTTPAddr        = "127.0.0.1:8080"
	DefaultRESPAddr        = "127.0.0.1:6379"
	DefaultShutdownTimeout = 5 * time.Second
	DefaultVersion         = "(devel)"
	DefaultCommit          = "unknown"
)

// DefaultConfig returns a Config with every default set: cluster's
// defaults, and the HTTP and RESP ports on loopback.
func DefaultConfig() Config {
	return Config{
		Cluster:         cluster.DefaultConfig(),
		HTTPAddr:        DefaultHTTPAddr,
		RESPAddr:        DefaultRESPAddr,
		Version:         DefaultVersion,
		Commit:          DefaultCommit,
		Listen:          net.Listen,
		ShutdownTimeout: DefaultShutdownTimeout,
		Logger:          hclog.NewNullLogger(),
	}
}

// Validation errors; Validate wraps them with the field's value.
var (
	ErrAdvertiseWithoutAddr = errors.New("server: an advertised address needs its listen address")
	ErrNegativeTimeout      = errors.New("server: ShutdownTimeout is negative")
)

// Validate reports a configuration Start would refuse. Zero fields are
// valid (they take the defaults).
func (c Config) Validate() error {
	if err := c.Cluster.Validate(); err != nil {
		return fmt.Errorf("server: %w", err)
	}
	if c.HTTPAddr == "" && c.HTTPAdvertise != "" {
		return fmt.Errorf("%w: HTTPAdvertise %q without HTTPAddr", ErrAdvertiseWithoutAddr, c.HTTPAdvertise)
	}
	if c.RESPAddr == "" && c.RESPAdvertise != "" {
		return fmt.Errorf("%w: RESPAdvertise %q without RESPAddr", ErrAdvertiseWithoutAddr, c.RESPAdvertise)
	}
	if c.ShutdownTimeout < 0 {
		return fmt.Errorf("%w: %v", ErrNegativeTimeout, c.ShutdownTimeout)
	}
	if err := c.HTTP.Validate(); err != nil {
		return fmt.Errorf("server: %w", err)
	}
	return nil
}

// withDefaults fills the zero fields that have a default (not the
// addresses: empty ones are not served).
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.Version == "" {
		c.Version = d.Version
	}
	if c.Commit == "" {
		c.Commit = d.Commit
	}
	if c.Listen == nil {
		c.Listen = d.Listen
	}
	if c.ShutdownTimeout == 0 {
		c.ShutdownTimeout = d.ShutdownTimeout
	}
	if c.Logger == nil {
		c.Logger = d.Logger
	}
	return c
}
