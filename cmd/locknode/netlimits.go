package main

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	flag "github.com/spf13/pflag"

	"github.com/locknode/locknode/auth"
	"github.com/locknode/locknode/cluster"
	"github.com/locknode/locknode/httpapi"
	"github.com/locknode/locknode/redisbridge"
	"github.com/locknode/locknode/redisbridge/resp"
	"github.com/locknode/locknode/transport"
)

// netLimits are the connection and buffer limits of a node's three ports
// (docs/operations.md "Limits"), as flags with LOCKNODE_* environment defaults.
type netLimits struct {
	httpMaxConns, httpHeaderTimeout, httpBodyTimeout, httpIdleTimeout *string
	httpMaxHeaderBytes, httpMaxBodyBytes                              *string
	maxWatchers                                                       *string

	respMaxClients, respTimeout, respMaxBulkLen, respMaxMultibulkLen *string
	respMaxCommandBytes, respPubSubLimit                             *string
	respTrackingMaxKeys                                              *string
	// respNotifyKeyspaceEvents is no limit but a RESP setting that
	// CONFIG SET also changes; it travels in the same redisbridge.Config.
	respNotifyKeyspaceEvents *string

	peerHandshakeTimeout, peerMaxConns *string

	httpMaxConnsPerAddr, respMaxClientsPerAddr, respAuthTimeout *string
	authFailDelay, authFailMaxDelay, authFailDisconnect         *string
}

// parsed holds the limits read from the flags.
type parsedLimits struct {
	HTTP httpapi.Config     // only the limit fields are set
	RESP redisbridge.Config // only the limit fields are set
	// PeerHandshakeTimeout and PeerMaxConns are the peer port's.
	PeerHandshakeTimeout time.Duration
	PeerMaxConns         int
	// AuthThrottle is the HTTP and RESP ports' shared throttle of failed
	// authentications (Logger unset).
	AuthThrottle auth.ThrottleConfig
}

// addNetLimitFlags registers the limit flags on fs.
func addNetLimitFlags(fs *flag.FlagSet) *netLimits {
	f := func(name, def, usage string) *string {
		env := "LOCKNODE_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
		return fs.String(name, envDefault(env, def), usage)
	}
	return &netLimits{
		httpMaxConns:       f("http-max-conns", strconv.Itoa(httpapi.DefaultMaxConns), "most open HTTP connections; one past it is answered 503 too_many_connections and closed"),
		httpHeaderTimeout:  f("http-header-timeout", httpapi.DefaultHeaderTimeout.String(), "time to receive an HTTP request's header; the connection is closed past it"),
		httpBodyTimeout:    f("http-body-timeout", httpapi.DefaultBodyTimeout.String(), "time to receive an HTTP request's body after its header; 408 and close past it (a blocking acquire's wait is not limited)"),
		httpIdleTimeout:    f("http-idle-timeout", "2m", "close a keep-alive HTTP connection idle this long"),
		httpMaxHeaderBytes: f("http-max-header-bytes", "64KiB", "largest HTTP request header; 431 past it"),
		httpMaxBodyBytes:   f("http-max-body-bytes", "1MiB", "largest HTTP request body; 413 past it"),
		maxWatchers:        f("max-watchers", strconv.Itoa(httpapi.DefaultMaxWatchers), "most HTTP blocking queries (GET /v1/locks...?index=) waiting at once; one past it is answered 503 too_many_watchers; 0: no limit"),

		respMaxClients:           f("resp-max-clients", strconv.Itoa(redisbridge.DefaultMaxConns), "most RESP client connections (Redis maxclients); one past it gets -ERR max number of clients reached"),
		respTimeout:              f("resp-timeout", "0", "close a RESP connection idle this long, subscribers exempt (Redis timeout); 0: never"),
		respMaxBulkLen:           f("resp-max-bulk-len", "16MiB", "largest RESP argument (Redis proto-max-bulk-len); -ERR Protocol error: invalid bulk length and close past it"),
		respMaxMultibulkLen:      f("resp-max-multibulk-len", strconv.Itoa(resp.DefaultMaxArgs), "most arguments in one RESP command; -ERR Protocol error: invalid multibulk length and close past it"),
		respMaxCommandBytes:      f("resp-max-command-bytes", "64MiB", "largest RESP command (all its arguments); a protocol error and close past it"),
		respTrackingMaxKeys:      f("resp-tracking-table-max-keys", strconv.Itoa(redisbridge.DefaultTrackingTableMaxKeys), "most keys a node remembers for client-side caching (Redis tracking-table-max-keys), and most BCAST prefixes; past it a key is evicted with an invalidation to its readers, and CLIENT TRACKING ... BCAST with new prefixes is refused"),
		respNotifyKeyspaceEvents: f("resp-notify-keyspace-events", "", "keyspace notifications this node's RESP subscribers receive, in Redis' notify-keyspace-events letters (e.g. KEA, Kgx$); CONFIG SET notify-keyspace-events changes it at run time; empty: none"),
		respPubSubLimit:          f("resp-pubsub-limit", "32MiB 8MiB 60s", "pending output of a subscriber that does not read: HARD SOFT SECONDS (Redis client-output-buffer-limit pubsub); disconnected at once past HARD, or past SOFT for longer than SECONDS; 0 for no limit"),

		peerHandshakeTimeout: f("peer-handshake-timeout", transport.DefaultHandshakeTimeout.String(), "time an accepted peer-port connection has to deliver its first whole request; closed past it"),
		peerMaxConns:         f("peer-max-conns", strconv.Itoa(transport.DefaultMaxConns), "most accepted peer-port connections open at once; one past it is closed"),

		httpMaxConnsPerAddr:   f("http-max-conns-per-addr", strconv.Itoa(httpapi.DefaultMaxConnsPerAddr), "most open HTTP connections from one source IP; one past it is answered 503 too_many_connections and closed; 0: no limit"),
		respMaxClientsPerAddr: f("resp-max-clients-per-addr", strconv.Itoa(redisbridge.DefaultMaxConnsPerAddr), "most RESP client connections from one source IP; one past it gets -ERR max number of clients from one address reached; 0: no limit"),
		respAuthTimeout:       f("resp-auth-timeout", redisbridge.DefaultAuthTimeout.String(), "with --users: close a RESP connection that has not authenticated this long after connecting (or RESET); 0: never"),
		authFailDelay:         f("auth-fail-delay", auth.DefaultFailDelay.String(), "wait before answering the third failed authentication (RESP AUTH, HTTP Basic) on a connection or from a source IP; doubles with each further failure"),
		authFailMaxDelay:      f("auth-fail-max-delay", auth.DefaultFailMaxDelay.String(), "longest wait before answering a failed authentication"),
		authFailDisconnect:    f("auth-fail-disconnect", strconv.Itoa(auth.DefaultFailDisconnect), "close a connection after this many failed authentications on it (HTTP: the answer says Connection: close); 0: never"),
	}
}

// parse reads the flags; the error names the flag.
func (n *netLimits) parse() (parsedLimits, error) {
	var p parsedLimits
	var errs []string
	fail := func(flag string, err error) { errs = append(errs, fmt.Sprintf("--%s: %v", flag, err)) }
	count := func(flag, s string, dst *int) {
		v, err := strconv.Atoi(strings.TrimSpace(s))
		switch {
		case err != nil:
			fail(flag, fmt.Errorf("%q is not a whole number", s))
		case v < 1:
			fail(flag, fmt.Errorf("%d must be at least 1", v))
		default:
			*dst = v
		}
	}
	dur := func(flag, s string, zeroOK bool, dst *time.Duration) {
		d, err := time.ParseDuration(strings.TrimSpace(s))
		switch {
		case s == "0" && zeroOK:
			*dst = 0
		case err != nil:
			fail(flag, fmt.Errorf("%q is not a duration (e.g. 10s, 2m)", s))
		case d < 0 || (d == 0 && !zeroOK):
			fail(flag, fmt.Errorf("%v must be positive", d))
		default:
			*dst = d
		}
	}
	size := func(flag, s string, dst *int64) {
		v, err := parseBytes(s)
		switch {
		case err != nil:
			fail(flag, fmt.Errorf("%q: %w", s, err))
		case v < 1:
			fail(flag, fmt.Errorf("%q must be at least 1 byte", s))
		default:
			*dst = v
		}
	}
	var b int64
	count("http-max-conns", *n.httpMaxConns, &p.HTTP.MaxConns)
	dur("http-header-timeout", *n.httpHeaderTimeout, false, &p.HTTP.HeaderTimeout)
	dur("http-body-timeout", *n.httpBodyTimeout, false, &p.HTTP.BodyTimeout)
	dur("http-idle-timeout", *n.httpIdleTimeout, false, &p.HTTP.IdleTimeout)
	if size("http-max-header-bytes", *n.httpMaxHeaderBytes, &b); b > math.MaxInt32 {
		fail("http-max-header-bytes", fmt.Errorf("%q is too large", *n.httpMaxHeaderBytes))
	}
	p.HTTP.MaxHeaderBytes = int(b)
	size("http-max-body-bytes", *n.httpMaxBodyBytes, &p.HTTP.MaxBodyBytes)

	count("resp-max-clients", *n.respMaxClients, &p.RESP.MaxConns)
	var idle time.Duration
	dur("resp-timeout", *n.respTimeout, true, &idle)
	p.RESP.IdleTimeout = idle
	if idle == 0 {
		p.RESP.IdleTimeout = -1 // never, as Redis' timeout 0
	}
	b = 0
	if size("resp-max-bulk-len", *n.respMaxBulkLen, &b); b > math.MaxInt32 {
		fail("resp-max-bulk-len", fmt.Errorf("%q is over 2 GiB", *n.respMaxBulkLen))
	}
	p.RESP.MaxBulkBytes = int(b)
	count("resp-max-multibulk-len", *n.respMaxMultibulkLen, &p.RESP.MaxArgs)
	if p.RESP.MaxArgs != 0 && p.RESP.MaxArgs < 8 {
		fail("resp-max-multibulk-len", fmt.Errorf("%d is below 8 (commands need that many)", p.RESP.MaxArgs))
	}
	b = 0
	size("resp-max-command-bytes", *n.respMaxCommandBytes, &b)
	p.RESP.MaxRequestBytes = int(b)
	count("resp-tracking-table-max-keys", *n.respTrackingMaxKeys, &p.RESP.TrackingTableMaxKeys)
	p.RESP.NotifyKeyspaceEvents = *n.respNotifyKeyspaceEvents
	if err := (redisbridge.Config{NotifyKeyspaceEvents: p.RESP.NotifyKeyspaceEvents}).Validate(); err != nil {
		fail("resp-notify-keyspace-events", fmt.Errorf("%q: a letter names no event class (use Ag$lshzxeKEtmdn)", p.RESP.NotifyKeyspaceEvents))
	}
	if err := parsePubSubLimit(*n.respPubSubLimit, &p.RESP); err != nil {
		fail("resp-pubsub-limit", err)
	}

	dur("peer-handshake-timeout", *n.peerHandshakeTimeout, false, &p.PeerHandshakeTimeout)
	count("peer-max-conns", *n.peerMaxConns, &p.PeerMaxConns)

	// 0 means "none" for these; the packages take a negative value for it.
	countOrNone := func(flag, s string, dst *int) {
		if strings.TrimSpace(s) == "0" {
			*dst = -1
			return
		}
		count(flag, s, dst)
	}
	countOrNone("http-max-conns-per-addr", *n.httpMaxConnsPerAddr, &p.HTTP.MaxConnsPerAddr)
	countOrNone("max-watchers", *n.maxWatchers, &p.HTTP.MaxWatchers)
	countOrNone("resp-max-clients-per-addr", *n.respMaxClientsPerAddr, &p.RESP.MaxConnsPerAddr)
	dur("resp-auth-timeout", *n.respAuthTimeout, true, &p.RESP.AuthTimeout)
	if p.RESP.AuthTimeout == 0 {
		p.RESP.AuthTimeout = -1
	}
	dur("auth-fail-delay", *n.authFailDelay, false, &p.AuthThrottle.Delay)
	dur("auth-fail-max-delay", *n.authFailMaxDelay, false, &p.AuthThrottle.MaxDelay)
	if p.AuthThrottle.MaxDelay != 0 && p.AuthThrottle.MaxDelay < p.AuthThrottle.Delay {
		fail("auth-fail-max-delay", fmt.Errorf("%v is below --auth-fail-delay %v", p.AuthThrottle.MaxDelay, p.AuthThrottle.Delay))
	}
	countOrNone("auth-fail-disconnect", *n.authFailDisconnect, &p.AuthThrottle.Disconnect)
	if len(errs) > 0 {
		return p, fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return p, nil
}

// applyPeer sets the peer-port limits on a node's config.
func (p parsedLimits) applyPeer(c *cluster.Config) {
	c.PeerHandshakeTimeout = p.PeerHandshakeTimeout
	c.PeerMaxConns = p.PeerMaxConns
}

// parsePubSubLimit reads "HARD SOFT SECONDS" (spaces or commas): sizes as
// parseBytes, 0 for none; SECONDS a whole number or a duration.
func parsePubSubLimit(s string, c *redisbridge.Config) error {
	parts := strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == ',' })
	if len(parts) != 3 {
		return fmt.Errorf("%q: want HARD SOFT SECONDS, e.g. \"32MiB 8MiB 60s\"", s)
	}
	hard, err := parseBytes(parts[0])
	if err != nil {
		return fmt.Errorf("HARD %q: %w", parts[0], err)
	}
	soft, err := parseBytes(parts[1])
	if err != nil {
		return fmt.Errorf("SOFT %q: %w", parts[1], err)
	}
	secs, err := time.ParseDuration(parts[2])
	if n, nerr := strconv.Atoi(parts[2]); nerr == nil {
		secs, err = time.Duration(n)*time.Second, nil
	}
	if err != nil || secs < 0 {
		return fmt.Errorf("%q: SECONDS %q is not a non-negative number of seconds or a duration", s, parts[2])
	}
	c.PubSubHardLimit, c.PubSubSoftLimit, c.PubSubSoftFor = hard, soft, secs
	if hard == 0 {
		c.PubSubHardLimit = -1
	}
	if soft == 0 {
		c.PubSubSoftLimit = -1
	}
	if secs == 0 {
		c.PubSubSoftFor = time.Nanosecond // over SOFT at two messages in a row
	}
	return nil
}
