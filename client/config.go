package client

import (
	"crypto/tls"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/locknode/locknode/api"
)

// Config configures a Client. Only Endpoints is required.
type Config struct {
	// Endpoints are node base URLs ("http://10.0.0.1:7700"). Requests go
	// to one of them and fail over to the next on a connection error or a
	// 502/503/504 answer. Any node accepts any request.
	Endpoints []string
	// HTTPClient sends the requests. Default: a client with no overall
	// timeout (acquire and campaign long-poll; per-attempt deadlines come
	// from RequestTimeout and the wait) whose transport is NewTransport's
	// (defaultIdlePerHost idle connections per node: every blocked Lock
	// holds a connection, and net/http's stock limit of 2 would close and
	// re-dial nearly every connection once more goroutines than that lock
	// at a time). A Timeout set here caps every request, long polls
	// included.
	HTTPClient *http.Client
	// TLS configures https:// endpoints of the default HTTPClient: the CA
	// to trust (RootCAs; nil: the system's) and a client certificate for
	// nodes that require one (Certificates or GetClientCertificate).
	// Leave it nil with your own HTTPClient, whose transport has its own.
	TLS *tls.Config
	// Logger gets retries, fail-overs and lock state changes. Default: null.
	Logger hclog.Logger
	// Retry bounds retries of retryable failures. Zero fields take the
	// DefaultRetryPolicy values.
	Retry RetryPolicy
	// RequestTimeout bounds one attempt of a non-blocking request; a
	// blocking one (acquire, campaign) gets its wait plus this. Default 10s.
	RequestTimeout time.Duration
	// DriftMargin is subtracted from every lease to get the holder's safe
	// deadline (send time + wait + granted TTL - margin): it covers the rate difference
	// between this machine's clock and the cluster leader's. Default
	// (zero): max(10ms, TTL/10) for each lease.
	DriftMargin time.Duration
	// Limits are the cluster's request limits: a request past one is
	// refused here, before it is sent, with the error the server would
	// answer. Zero fields take api.DefaultLimits' values; set the same
	// values the cluster runs with (locknode serve --max-ttl ...) if they
	// differ from the defaults.
	Limits api.Limits
	// Username and Password, when either is set, are sent as HTTP Basic
	// credentials with every request, for a node started with --users.
	// Use https endpoints: Basic credentials travel in clear otherwise.
	Username string
	Password string
	// NoDefaultMetadata leaves this process's host and pid out of the
	// metadata of every acquire (see WithMetadata); a single Lock can
	// leave them out with WithoutDefaultMetadata, a single Acquire or
	// TryAcquire with a context from api.WithoutDefaultMeta.
	NoDefaultMetadata bool
}

// RetryPolicy is exponential back-off with full jitter: before retry
// round r (r = 1, 2, ...) the client sleeps a random duration in
// [0, min(MaxDelay, BaseDelay * 2^(r-1))). A round is one try of every
// endpoint; moving to the next endpoint inside a round does not sleep.
type RetryPolicy struct {
	// MaxAttempts is the number of requests one logical operation may
	// send, fail-overs included. Default 8.
	MaxAttempts int
	// BaseDelay is the first back-off bound. Default 50ms.
	BaseDelay time.Duration
	// MaxDelay caps the back-off bound. Default 2s.
	MaxDelay time.Duration
}

// DefaultRetryPolicy is used for zero RetryPolicy fields.
var DefaultRetryPolicy = RetryPolicy{MaxAttempts: 8, BaseDelay: 50 * time.Millisecond, MaxDelay: 2 * time.Second}

// DefaultRequestTimeout is Config.RequestTimeout when zero.
const DefaultRequestTimeout = 10 * time.Second

// Validate reports a configuration error.
func (c Config) Validate() error {
	if len(c.Endpoints) == 0 {
		return errors.New("client: no endpoints")
	}
	for _, e := range c.Endpoints {
		u, err := url.Parse(e)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("client: endpoint %q is not an http(s) URL", e)
		}
	}
	switch {
	case c.Retry.MaxAttempts < 0, c.Retry.BaseDelay < 0, c.Retry.MaxDelay < 0:
		return errors.New("client: negative retry policy field")
	case c.RequestTimeout < 0:
		return errors.New("client: negative RequestTimeout")
	case c.DriftMargin < 0:
		return errors.New("client: negative DriftMargin")
	case c.TLS != nil && c.HTTPClient != nil:
		return errors.New("client: TLS is for the default HTTPClient; configure your HTTPClient's transport instead")
	}
	if err := c.Limits.WithDefaults().Validate(); err != nil {
		return fmt.Errorf("client: %w", err)
	}
	return nil
}

// defaultIdlePerHost is the default client's idle connections per node.
const defaultIdlePerHost = 256

func (c Config) withDefaults() Config {
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{Transport: newTransport(defaultIdlePerHost, c.TLS)}
	}
	if c.Logger == nil {
		c.Logger = hclog.NewNullLogger()
	}
	if c.Retry.MaxAttempts == 0 {
		c.Retry.MaxAttempts = DefaultRetryPolicy.MaxAttempts
	}
	if c.Retry.BaseDelay == 0 {
		c.Retry.BaseDelay = DefaultRetryPolicy.BaseDelay
	}
	if c.Retry.MaxDelay == 0 {
		c.Retry.MaxDelay = DefaultRetryPolicy.MaxDelay
	}
	if c.RequestTimeout == 0 {
		c.RequestTimeout = DefaultRequestTimeout
	}
	c.Limits = c.Limits.WithDefaults()
	trimmed := make([]string, len(c.Endpoints))
	for i, e := range c.Endpoints {
		for len(e) > 0 && e[len(e)-1] == '/' {
			e = e[:len(e)-1]
		}
		trimmed[i] = e
	}
	c.Endpoints = trimmed
	return c
}

// NewTransport returns the transport of the default HTTPClient, for
// callers that wrap it (to count or trace requests) or build their own
// http.Client around it. Plain http:// requests are sent HTTP/1.1 by the
// calling goroutine on a pool of keep-alive connections, at most
// maxIdlePerHost idle per node (0: 2, net/http's default). https, proxies
// from the environment (HTTP_PROXY and the like) and protocol upgrades go
// through a clone of http.DefaultTransport with the same idle limit.
func NewTransport(maxIdlePerHost int) http.RoundTripper {
	return newTransport(maxIdlePerHost, nil)
}

// NewTLSTransport is NewTransport for https endpoints whose certificates
// tlsCfg verifies (and that may ask for its client certificate): https
// requests then take the same HTTP/1.1 path as plain ones. The default
// HTTPClient of a Config with TLS set uses it.
func NewTLSTransport(maxIdlePerHost int, tlsCfg *tls.Config) http.RoundTripper {
	return newTransport(maxIdlePerHost, tlsCfg)
}

// newTransport is NewTransport with tlsCfg for https; with it, https
// requests take the same HTTP/1.1 path as plain ones (without it they go
// through net/http with Go's TLS defaults).
func newTransport(maxIdlePerHost int, tlsCfg *tls.Config) http.RoundTripper {
	if maxIdlePerHost <= 0 {
		maxIdlePerHost = http.DefaultMaxIdleConnsPerHost
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	if tlsCfg != nil {
		t.TLSClientConfig = tlsCfg.Clone()
	}
	t.MaxIdleConnsPerHost = maxIdlePerHost
	t.MaxIdleConns = 4 * maxIdlePerHost
	h := newH1Transport(t, maxIdlePerHost)
	if tlsCfg != nil {
		h.tls = t.TLSClientConfig
	}
	return h
}

// backoff returns the sleep before retry round r >= 1.
func (p RetryPolicy) backoff(r int) time.Duration {
	bound := p.BaseDelay
	for i := 1; i < r && bound < p.MaxDelay; i++ {
		bound *= 2
	}
	bound = min(bound, p.MaxDelay)
	if bound <= 0 {
		return 0
	}
	return rand.N(bound)
}

// margin is the drift margin for a lease of ttl.
func (c Config) margin(ttl time.Duration) time.Duration {
	if c.DriftMargin > 0 {
		return c.DriftMargin
	}
	return max(10*time.Millisecond, ttl/10)
}
