package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/locknode/locknode/cluster"
	"github.com/locknode/locknode/httpapi"
	"github.com/locknode/locknode/redisbridge"
	"github.com/locknode/locknode/redisbridge/mirror"
)

// Server is one running node with its HTTP and RESP servers and mirror.
type Server struct {
	cfg        Config
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

	stopOnce sync.Once
}

// Start starts the node and, once it runs, its mirror and servers, then
// joins the cluster when Cluster.Join is set. ctx bounds the start-up
// (joining a cluster); the node runs until Close or Kill. On an error,
// whatever was started is stopped again and nothing stays listening.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	s := &Server{cfg: cfg, log: cfg.Logger}
	if err := s.listen(cfg); err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	tr, err := peerTransport(cfg)
	if err != nil {
		s.closeListeners()
		return nil, fmt.Errorf("server: %w", err)
	}
	if tr != nil {
		cfg.Cluster.Transport = tr
	}
	cfg.Cluster.Advertised = s.clientAddrs(cfg)
	// Joined below, once the servers run: meanwhile they answer clients
	// at once (TRYAGAIN, 503) instead of leaving them in the accept queue.
	join := cfg.Cluster.Join
	cfg.Cluster.Join = nil
	if s.node, err = cluster.Start(ctx, cfg.Cluster); err != nil {
		s.closeListeners()
		if tr != nil {
			tr.Close()
		}
		return nil, err
	}
	s.cfg = cfg
	if err := s.startServing(cfg); err != nil {
		s.Close()
		return nil, fmt.Errorf("server: %w", err)
	}
	if err := s.node.Join(ctx, join); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// startServing registers the node's metrics and starts the mirror and
// the client servers.
func (s *Server) startServing(cfg Config) error {
	if err := s.registerMetrics(cfg); err != nil {
		return err
	}
	if err := s.startMirror(cfg); err != nil {
		return err
	}
	throttle := newThrottle(cfg)
	if s.httpLn != nil {
		s.httpState.addr = s.httpLn.Addr().String()
		s.ready.add("http", s.httpState.check)
	}
	if s.respLn != nil {
		s.respState.addr = s.respLn.Addr().String()
		s.ready.add("resp", s.respState.check)
	}
	s.ready.add("", s.node.Ready) // its reasons say "cluster: not ready: ..."
	if err := s.startHTTP(cfg, throttle); err != nil {
		return err
	}
	if err := s.startRESP(cfg, throttle); err != nil {
		return err
	}
	// Accepts failing and retried (out of file descriptors) on any of the
	// three ports; the error names the port. Added once the RESP server
	// runs: the HTTP server already answers probes.
	s.ready.add("", func(context.Context) error { return s.ListenerErr() })
	return nil
}

// Node is the raft node the servers serve.
func (s *Server) Node() *cluster.Node { return s.node }

// HTTPAddr and RESPAddr are the bound addresses of the client ports
// ("" for a port not served).
func (s *Server) HTTPAddr() string { return addrOf(s.httpLn) }
func (s *Server) RESPAddr() string { return addrOf(s.respLn) }

func addrOf(ln net.Listener) string {
	if ln == nil {
		return ""
	}
	return ln.Addr().String()
}

// ListenerErr reports whether the node's ports accept connections: nil
// when they do, else the first one's trouble — accepts failing and
// retried (netguard.ErrAcceptFailing, e.g. out of file descriptors), or a
// listener that stopped for good (netguard.ErrStopped), the error naming
// the port ("resp: ...", "http: ...", "peer: ..."). For readiness.
func (s *Server) ListenerErr() error {
	if s.resp != nil {
		if err := s.resp.ListenerErr(); err != nil {
			return err
		}
	}
	if s.httpLim != nil {
		if err := s.httpLim.Err(); err != nil {
			return err
		}
	}
	if s.node != nil {
		return s.node.PeerListenerErr()
	}
	return nil
}

// CancelRequests ends the context of every HTTP request in flight, so a
// blocking acquire stops waiting; the servers keep running.
func (s *Server) CancelRequests() {
	if s.cancelRequests != nil {
		s.cancelRequests()
	}
}

// Close stops the servers (HTTP requests in flight get ShutdownTimeout),
// then the mirror, then the node (gracefully: a leader hands leadership
// over first). Only the first Close or Kill acts; later ones return nil.
func (s *Server) Close() error {
	return s.stop(true)
}

// Kill stops the node as a crash would: connections are cut at once, no
// request in flight is waited for, and the node stops without handing
// leadership over (cluster.Node.Kill). For tests and for stopping every
// node of a cluster at once, where there is no one to hand over to.
func (s *Server) Kill() error {
	return s.stop(false)
}

func (s *Server) stop(graceful bool) error {
	var err error
	s.stopOnce.Do(func() {
		if graceful {
			s.StopServers()
			err = s.node.Close()
			return
		}
		s.killServers()
		err = s.node.Kill()
	})
	return err
}

// StopServers stops the RESP and HTTP servers (HTTP requests in flight
// get ShutdownTimeout) and the mirror, leaving the node running.
func (s *Server) StopServers() {
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout)
	defer cancel()
	s.stopRESP()
	if s.httpSrv != nil {
		if err := s.httpSrv.Shutdown(ctx); err != nil {
			s.httpSrv.Close()
		}
		<-s.httpDone
	} else if s.httpLn != nil {
		s.httpLn.Close()
	}
	s.CancelRequests()
	s.stopMirror()
}

// killServers is StopServers without waiting for requests in flight.
func (s *Server) killServers() {
	s.CancelRequests()
	if s.httpSrv != nil {
		s.httpSrv.Close()
		<-s.httpDone
	} else if s.httpLn != nil {
		s.httpLn.Close()
	}
	s.stopRESP()
	s.stopMirror()
}

func (s *Server) stopRESP() {
	if s.resp != nil {
		s.resp.Close()
		<-s.respDone
	} else if s.respLn != nil {
		s.respLn.Close()
	}
}

// stopMirror stops the mirror; it reads the node, so it must be gone
// before the node closes.
func (s *Server) stopMirror() {
	if s.mirrorStop != nil {
		s.mirrorStop()
		<-s.mirrorDone
	}
}

// cleanClose is err, or nil for the error http.Server.Serve returns on
// a clean close.
func cleanClose(err error) error {
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// peerAskTimeout bounds the wait for a member never asked before
// (respPeers); known ones answer from the node's cache.
const peerAskTimeout = time.Second
