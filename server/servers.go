package server

import (
	"context"
	"fmt"
	"net"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/auth"
	"github.com/locknode/locknode/httpapi"
	"github.com/locknode/locknode/redisbridge"
	"github.com/locknode/locknode/redisbridge/mirror"
)

// registerMetrics adds the build, raft and audit metrics to the node's
// registry (served on /metrics).
func (s *Server) registerMetrics(cfg Config) error {
	reg := s.node.Metrics()
	if err := reg.Register(buildInfo(cfg.Version, cfg.Commit)); err != nil {
		return fmt.Errorf("build info metric: %w", err)
	}
	if err := exportRaftMetrics(reg); err != nil {
		return fmt.Errorf("raft metrics: %w", err)
	}
	for _, c := range cfg.Audit.Collectors() {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("audit metrics: %w", err)
		}
	}
	return nil
}

// startMirror starts the mirror when one is configured.
func (s *Server) startMirror(cfg Config) error {
	if cfg.Mirror == nil {
		return nil
	}
	mc := *cfg.Mirror
	mc.Logger = cfg.Logger
	m, err := mirror.New(mc, s.node)
	if err != nil {
		return fmt.Errorf("mirror: %w", err)
	}
	for _, c := range m.Collectors() {
		if err := s.node.Metrics().Register(c); err != nil {
			return fmt.Errorf("mirror metrics: %w", err)
		}
	}
	s.mirror = m
	var mctx context.Context
	mctx, s.mirrorStop = context.WithCancel(context.Background())
	s.mirrorDone = make(chan struct{})
	// Ends when Close cancels mctx (Run then returns), or at once if the
	// mirror cannot start.
	go func() {
		defer close(s.mirrorDone)
		if err := m.Run(mctx); err != nil {
			s.log.Error("mirror stopped", "error", err)
		}
	}()
	return nil
}

// newThrottle is the one throttle of failed authentications for both
// ports: a source address guessing passwords is counted across them.
func newThrottle(cfg Config) *auth.Throttle {
	tc := cfg.AuthThrottle
	tc.Logger = cfg.Logger.Named("auth")
	return auth.NewThrottle(tc)
}

// startHTTP starts the HTTP API (with /metrics and /readyz) on httpLn.
func (s *Server) startHTTP(cfg Config, throttle *auth.Throttle) error {
	if s.httpLn == nil {
		return nil
	}
	hc := cfg.HTTP
	hc.Logger = cfg.Logger.Named("http")
	hc.AuthThrottle = throttle
	hc.Metrics = promhttp.HandlerFor(s.node.Metrics(), promhttp.HandlerOpts{})
	hc.Ready = s.ready.ready
	hc.Registerer = s.node.Metrics()
	hc.Users, hc.Audit = cfg.Users, cfg.Audit
	hc.TracerProvider = cfg.Cluster.TracerProvider
	adv := cfg.Cluster.Advertised
	hc.Extra = func(st *api.Status) {
		st.HTTPAddr, st.RESPAddr = adv.HTTP, adv.RESP
		st.Release = cfg.Version
		if s.mirror != nil {
			st.Mirror = s.mirror.Status().Map()
		}
	}
	if err := hc.Validate(); err != nil {
		return fmt.Errorf("http: %w", err)
	}
	// No WriteTimeout (NewServer sets none): a blocking acquire long-polls
	// up to api.MaxWait.
	srv := httpapi.NewServer(httpapi.New(s.node, hc), hc)
	reqCtx, cancelRequests := context.WithCancel(context.Background())
	s.cancelRequests = cancelRequests
	srv.BaseContext = func(net.Listener) context.Context { return reqCtx }
	s.httpLim = httpapi.LimitListener(s.httpLn, hc)
	s.httpDone = make(chan struct{})
	s.httpSrv = srv
	// Ends when Close shuts the server down (or the listener is closed
	// underneath: ListenerErr reports it).
	go func() {
		defer close(s.httpDone)
		err := cleanClose(srv.Serve(s.httpLim))
		s.httpState.stop(err)
		if err != nil {
			s.log.Error("http server stopped", "error", err)
		}
	}()
	return nil
}

// startRESP starts the Redis protocol bridge on respLn.
func (s *Server) startRESP(cfg Config, throttle *auth.Throttle) error {
	if s.respLn == nil {
		return nil
	}
	rc := cfg.RESP
	rc.Addr = cfg.Cluster.Advertised.RESP
	rc.NodeID = cfg.Cluster.ID
	rc.Logger = cfg.Logger.Named("resp")
	rc.Peers = s.respPeers
	rc.TracerProvider = cfg.Cluster.TracerProvider
	rc.Members = s.respMembers
	rc.Users, rc.Audit = cfg.Users, cfg.Audit
	rc.AuthThrottle = throttle
	if s.mirror != nil {
		rc.ExtraInfo = s.mirror.InfoText
	}
	rs, err := redisbridge.New(s.node, rc)
	if err != nil {
		return fmt.Errorf("resp: %w", err)
	}
	for _, c := range rs.Collectors() {
		if err := s.node.Metrics().Register(c); err != nil {
			return fmt.Errorf("resp metrics: %w", err)
		}
	}
	s.resp = rs
	s.respDone = make(chan struct{})
	// Ends when Close closes the bridge (or the listener is closed
	// underneath: ListenerErr reports it).
	go func() {
		defer close(s.respDone)
		err := rs.Serve(s.respLn)
		s.respState.stop(err)
		if err != nil {
			s.log.Error("resp server stopped", "error", err)
		}
	}()
	return nil
}

// respMembers describes every member of the raft configuration
// (cluster.Node.PeerAddrs) for the bridge's Redis Cluster interface.
func (s *Server) respMembers() []redisbridge.Member {
	ctx, cancel := context.WithTimeout(context.Background(), peerAskTimeout)
	defer cancel()
	var out []redisbridge.Member
	for _, a := range s.node.PeerAddrs(ctx) {
		out = append(out, redisbridge.Member{ID: a.ID, RESP: a.RESP, Raft: a.Raft, Reachable: a.Reachable})
	}
	return out
}

// respPeers returns the RESP addresses of the members that answer
// (cluster.Node.PeerAddrs), this node included, for SENTINEL and INFO.
func (s *Server) respPeers() []string {
	ctx, cancel := context.WithTimeout(context.Background(), peerAskTimeout)
	defer cancel()
	var out []string
	for _, a := range s.node.PeerAddrs(ctx) {
		if a.Reachable && a.RESP != "" {
			out = append(out, a.RESP)
		}
	}
	return out
}
