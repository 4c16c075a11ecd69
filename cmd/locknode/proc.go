package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/auth"
	"github.com/locknode/locknode/cluster"
	"github.com/locknode/locknode/httpapi"
	"github.com/locknode/locknode/redisbridge"
	"github.com/locknode/locknode/redisbridge/mirror"
)

// procConfig is everything one node process serves.
type procConfig struct {
	Cluster  cluster.Config
	HTTPAddr string // listen address of the HTTP API and /metrics
	RESPAddr string // listen address of the Redis protocol bridge
	// HTTPAdvertise and RESPAdvertise are the addresses other members
	// hand to clients (SENTINEL, INFO); default: the bound address, with
	// the raft address's host when bound to a wildcard.
	HTTPAdvertise string
	RESPAdvertise string
	// Mirror, when set, mirrors the lock table into that Redis (every
	// node runs a mirror; only the leader's writes).
	Mirror *mirror.Config
	// TLS, when set, serves HTTP (https) and RESP over TLS with it.
	TLS    *tls.Config
	Logger hclog.Logger
	// Limits are the HTTP and RESP servers' connection and buffer limits
	// (zero fields: the packages' defaults).
	Limits parsedLimits
	// Users, when set, authenticates every HTTP and RESP request.
	Users *auth.Store
	// Audit logs and counts forced releases, membership changes and
	// refused requests (nil: not audited).
	Audit *auth.Audit
}

// proc is one running node with its HTTP and RESP servers and mirror.
type proc struct {
	node       *cluster.Node
	httpLn     net.Listener
	httpSrv    *http.Server
	httpLim    *httpapi.LimitedListener
	respLn     net.Listener
	resp       *redisbridge.Server
	mirror     *mirror.Mirror
	mirrorStop context.CancelFunc
	httpDone   chan struct{}
	respDone   chan struct{}
	mirrorDone chan struct{}
	// cancelRequests ends the context of every HTTP request in flight
	// (the server's BaseContext), so a blocking acquire stops waiting.
	cancelRequests context.CancelFunc
	log            hclog.Logger
	// ready is GET /readyz: the node's Ready and the client listeners'
	// accept loops (httpState, respState).
	ready     readiness
	httpState listenerState
	respState listenerState
}

// startProc starts the node and, once it runs, its mirror and servers.
// ctx bounds the start-up (joining a cluster).
func startProc(ctx context.Context, pc procConfig) (*proc, error) {
	p := &proc{log: pc.Logger}
	var err error
	// Listen first so a port that is taken fails before raft starts, and
	// so the node can advertise the ports actually bound.
	if p.httpLn, err = net.Listen("tcp", pc.HTTPAddr); err != nil {
		return nil, fmt.Errorf("http listen: %w", err)
	}
	if p.respLn, err = net.Listen("tcp", pc.RESPAddr); err != nil {
		p.httpLn.Close()
		return nil, fmt.Errorf("resp listen: %w", err)
	}
	if pc.TLS != nil {
		// The handshake runs on each connection's first read, in its own
		// goroutine (bounded by ReadHeaderTimeout on HTTP).
		p.httpLn = tls.NewListener(p.httpLn, pc.TLS)
		p.respLn = tls.NewListener(p.respLn, pc.TLS)
	}
	raftHost := raftAdvertiseHost(pc.Cluster)
	pc.Cluster.Advertised = cluster.ClientAddrs{
		HTTP: advertiseAddr(pc.HTTPAdvertise, p.httpLn.Addr(), raftHost),
		RESP: advertiseAddr(pc.RESPAdvertise, p.respLn.Addr(), raftHost),
	}
	// A node process owns its heap: give the snapshot's transient memory
	// back to the OS (cluster.Config.FreeMemoryAfterSnapshot says why).
	pc.Cluster.FreeMemoryAfterSnapshot = true
	// Joined below, once the servers run: meanwhile they answer clients
	// at once (TRYAGAIN, 503) instead of leaving them in the accept queue.
	join := pc.Cluster.Join
	pc.Cluster.Join = nil
	if p.node, err = cluster.Start(ctx, pc.Cluster); err != nil {
		p.httpLn.Close()
		p.respLn.Close()
		return nil, err
	}
	adv := pc.Cluster.Advertised
	if err := p.node.Metrics().Register(buildInfo()); err != nil {
		p.Close()
		return nil, fmt.Errorf("build info metric: %w", err)
	}
	if err := exportRaftMetrics(p.node.Metrics()); err != nil {
		p.Close()
		return nil, fmt.Errorf("raft metrics: %w", err)
	}
	for _, c := range pc.Audit.Collectors() {
		if err := p.node.Metrics().Register(c); err != nil {
			p.Close()
			return nil, fmt.Errorf("audit metrics: %w", err)
		}
	}

	if pc.Mirror != nil {
		mc := *pc.Mirror
		mc.Logger = pc.Logger
		if p.mirror, err = mirror.New(mc, p.node); err != nil {
			p.Close()
			return nil, fmt.Errorf("mirror: %w", err)
		}
		for _, c := range p.mirror.Collectors() {
			if err := p.node.Metrics().Register(c); err != nil {
				p.mirror = nil
				p.Close()
				return nil, fmt.Errorf("mirror metrics: %w", err)
			}
		}
		var mctx context.Context
		mctx, p.mirrorStop = context.WithCancel(context.Background())
		p.mirrorDone = make(chan struct{})
		// Ends when Close cancels mctx (Run then returns), or at once if
		// the mirror cannot start.
		go func() {
			defer close(p.mirrorDone)
			if err := p.mirror.Run(mctx); err != nil {
				p.log.Error("mirror stopped", "error", err)
			}
		}()
	}

	// One throttle for both ports: a source address guessing passwords is
	// counted across them.
	tc := pc.Limits.AuthThrottle
	tc.Logger = pc.Logger.Named("auth")
	throttle := auth.NewThrottle(tc)

	hc := pc.Limits.HTTP
	hc.Logger = pc.Logger.Named("http")
	hc.AuthThrottle = throttle
	hc.Metrics = promhttp.HandlerFor(p.node.Metrics(), promhttp.HandlerOpts{})
	p.httpState.addr, p.respState.addr = p.httpLn.Addr().String(), p.respLn.Addr().String()
	p.ready.add("http", p.httpState.check)
	p.ready.add("resp", p.respState.check)
	p.ready.add("", p.node.Ready) // its reasons say "cluster: not ready: ..."
	hc.Ready = p.ready.ready
	hc.Registerer = p.node.Metrics()
	hc.Users, hc.Audit = pc.Users, pc.Audit
	hc.TracerProvider = pc.Cluster.TracerProvider
	release, _ := buildVersion()
	hc.Extra = func(s *api.Status) {
		s.HTTPAddr, s.RESPAddr = adv.HTTP, adv.RESP
		s.Release = release
		if p.mirror != nil {
			s.Mirror = p.mirror.Status().Map()
		}
	}
	if err := hc.Validate(); err != nil {
		p.Close()
		return nil, fmt.Errorf("http: %w", err)
	}
	// No WriteTimeout (NewServer sets none): a blocking acquire long-polls
	// up to api.MaxWait.
	p.httpSrv = httpapi.NewServer(httpapi.New(p.node, hc), hc)
	reqCtx, cancelRequests := context.WithCancel(context.Background())
	p.cancelRequests = cancelRequests
	p.httpSrv.BaseContext = func(net.Listener) context.Context { return reqCtx }
	p.httpLim = httpapi.LimitListener(p.httpLn, hc)
	p.httpDone = make(chan struct{})
	// Ends when Close shuts the server down (or the listener is closed
	// underneath: ListenerErr reports it).
	go func() {
		defer close(p.httpDone)
		err := p.httpSrv.Serve(p.httpLim)
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		p.httpState.stop(err)
		if err != nil {
			p.log.Error("http server stopped", "error", err)
		}
	}()

	rc := pc.Limits.RESP
	rc.Addr = adv.RESP
	rc.NodeID = pc.Cluster.ID
	rc.Logger = pc.Logger.Named("resp")
	rc.Peers = p.respPeers
	rc.Users, rc.Audit = pc.Users, pc.Audit
	rc.TracerProvider = pc.Cluster.TracerProvider
	rc.AuthThrottle = throttle
	if p.mirror != nil {
		rc.ExtraInfo = p.mirror.InfoText
	}
	if p.resp, err = redisbridge.New(p.node, rc); err != nil {
		p.Close()
		return nil, fmt.Errorf("resp: %w", err)
	}
	for _, c := range p.resp.Collectors() {
		if err := p.node.Metrics().Register(c); err != nil {
			p.Close()
			return nil, fmt.Errorf("resp metrics: %w", err)
		}
	}
	// Accepts failing and retried (out of file descriptors) on any of the
	// three ports; the error names the port. Added once p.resp is set: the
	// HTTP server already answers probes.
	p.ready.add("", func(context.Context) error { return p.ListenerErr() })
	p.respDone = make(chan struct{})
	// Ends when Close closes the bridge (or the listener is closed
	// underneath: ListenerErr reports it).
	go func() {
		defer close(p.respDone)
		err := p.resp.Serve(p.respLn)
		p.respState.stop(err)
		if err != nil {
			p.log.Error("resp server stopped", "error", err)
		}
	}()
	if err := p.node.Join(ctx, join); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

// respPeers returns the RESP addresses of the members that answer
// (cluster.Node.PeerAddrs), this node included, for SENTINEL and INFO.
func (p *proc) respPeers() []string {
	// A member never asked before is waited for at most this long; known
	// ones answer from the node's cache.
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	var out []string
	for _, a := range p.node.PeerAddrs(ctx) {
		if a.Reachable && a.RESP != "" {
			out = append(out, a.RESP)
		}
	}
	return out
}

// raftAdvertiseHost is the host other nodes reach this node's raft
// port on, or "" when only a wildcard is known.
func raftAdvertiseHost(c cluster.Config) string {
	addr := c.Advertise
	if addr == "" && c.Transport != nil {
		addr = c.Transport.Addr().String()
	}
	if addr == "" {
		addr = c.BindAddr
	}
	h, _, err := net.SplitHostPort(addr)
	if err != nil || isWildcard(h) {
		return ""
	}
	return h
}

// advertiseAddr is explicit if given, else bound; a wildcard host in
// bound is replaced by host (when known).
func advertiseAddr(explicit string, bound net.Addr, host string) string {
	if explicit != "" {
		return explicit
	}
	h, port, err := net.SplitHostPort(bound.String())
	if err != nil || !isWildcard(h) || host == "" {
		return bound.String()
	}
	return net.JoinHostPort(host, port)
}

func isWildcard(host string) bool {
	ip := net.ParseIP(host)
	return host == "" || (ip != nil && ip.IsUnspecified())
}

// ListenerErr reports whether the node's three ports accept connections:
// nil when they do, else the first one's trouble — accepts failing and
// retried (netguard.ErrAcceptFailing, e.g. out of file descriptors), or a
// listener that stopped for good (netguard.ErrStopped), the error naming
// the port ("resp: ...", "http: ...", "peer: ..."). For readiness.
func (p *proc) ListenerErr() error {
	if p.resp != nil {
		if err := p.resp.ListenerErr(); err != nil {
			return err
		}
	}
	if p.httpLim != nil {
		if err := p.httpLim.Err(); err != nil {
			return err
		}
	}
	if p.node != nil {
		return p.node.PeerListenerErr()
	}
	return nil
}

func (p *proc) HTTPAddr() string { return p.httpLn.Addr().String() }
func (p *proc) RESPAddr() string { return p.respLn.Addr().String() }

// Close stops the servers (in-flight requests get a few seconds), then
// the mirror, then the node (gracefully: a leader hands over first).
func (p *proc) Close() error {
	return p.stop(p.node.Close)
}

// stop is Close with the node's own stop: Node.Close hands leadership
// over first; Node.Kill does not (dev stops every node at once, so there
// is no one to hand over to).
func (p *proc) stop(stopNode func() error) error {
	p.stopServers()
	return stopNode()
}

// stopServers stops the RESP and HTTP servers (in-flight HTTP requests
// get a few seconds) and the mirror, leaving the node running.
func (p *proc) stopServers() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if p.resp != nil {
		p.resp.Close()
		<-p.respDone
	} else {
		p.respLn.Close()
	}
	if p.httpSrv != nil {
		if err := p.httpSrv.Shutdown(ctx); err != nil {
			p.httpSrv.Close()
		}
		<-p.httpDone
	} else {
		p.httpLn.Close()
	}
	if p.cancelRequests != nil {
		p.cancelRequests()
	}
	// The mirror reads the node; it must be gone before the node closes.
	if p.mirrorStop != nil {
		p.mirrorStop()
		<-p.mirrorDone
	}
}
