package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/cluster"
	"github.com/locknode/locknode/httpapi"
	"github.com/locknode/locknode/redisbridge"
)

// procConfig is everything one node process serves.
type procConfig struct {
	Cluster  cluster.Config
	HTTPAddr string // listen address of the HTTP API and /metrics
	RESPAddr string // listen address of the Redis protocol bridge
	Logger   hclog.Logger
	// RESPPeers returns the RESP addresses of the live members (for
	// SENTINEL and INFO); nil: only this node.
	RESPPeers func() []string
}

// proc is one running node with its HTTP and RESP servers.
type proc struct {
	node     *cluster.Node
	httpLn   net.Listener
	httpSrv  *http.Server
	respLn   net.Listener
	resp     *redisbridge.Server
	httpDone chan struct{}
	respDone chan struct{}
	log      hclog.Logger
}

// startProc starts the node and, once it runs, its servers. ctx bounds
// the start-up (joining a cluster).
func startProc(ctx context.Context, pc procConfig) (*proc, error) {
	p := &proc{log: pc.Logger, httpDone: make(chan struct{}), respDone: make(chan struct{})}
	var err error
	// Listen first so a port that is taken fails before raft starts.
	if p.httpLn, err = net.Listen("tcp", pc.HTTPAddr); err != nil {
		return nil, fmt.Errorf("http listen: %w", err)
	}
	if p.respLn, err = net.Listen("tcp", pc.RESPAddr); err != nil {
		p.httpLn.Close()
		return nil, fmt.Errorf("resp listen: %w", err)
	}
	if p.node, err = cluster.Start(ctx, pc.Cluster); err != nil {
		p.httpLn.Close()
		p.respLn.Close()
		return nil, err
	}
	httpAddr, respAddr := p.httpLn.Addr().String(), p.respLn.Addr().String()

	h := httpapi.New(p.node, httpapi.Config{
		Logger:  pc.Logger.Named("http"),
		Metrics: promhttp.HandlerFor(p.node.Metrics(), promhttp.HandlerOpts{}),
		Extra: func(s *api.Status) {
			s.HTTPAddr, s.RESPAddr = httpAddr, respAddr
		},
	})
	// No WriteTimeout: a blocking acquire long-polls up to api.MaxWait.
	p.httpSrv = &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	// Ends when Close shuts the server down.
	go func() {
		defer close(p.httpDone)
		if err := p.httpSrv.Serve(p.httpLn); err != nil && !errors.Is(err, http.ErrServerClosed) {
			p.log.Error("http server stopped", "error", err)
		}
	}()

	peers := pc.RESPPeers
	if peers == nil {
		peers = func() []string { return []string{respAddr} }
	}
	p.resp, err = redisbridge.New(p.node, redisbridge.Config{
		Addr:   respAddr,
		NodeID: pc.Cluster.ID,
		Logger: pc.Logger.Named("resp"),
		Peers:  peers,
	})
	if err != nil {
		p.Close()
		return nil, fmt.Errorf("resp: %w", err)
	}
	// Ends when Close closes the bridge.
	go func() {
		defer close(p.respDone)
		if err := p.resp.Serve(p.respLn); err != nil {
			p.log.Debug("resp server stopped", "error", err)
		}
	}()
	return p, nil
}

func (p *proc) HTTPAddr() string { return p.httpLn.Addr().String() }
func (p *proc) RESPAddr() string { return p.respLn.Addr().String() }

// Close stops the servers (in-flight requests get a few seconds), then
// the node (gracefully: a leader hands over first).
func (p *proc) Close() error {
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
	}
	return p.node.Close()
}
