package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"

	"github.com/locknode/locknode/cluster"
	"github.com/locknode/locknode/transport"
)

// listen opens the client ports that are configured (before raft starts,
// so a port that is taken fails first, and so the node can advertise the
// ports actually bound). On an error nothing stays open.
func (s *Server) listen(cfg Config) error {
	var err error
	if cfg.HTTPAddr != "" {
		if s.httpLn, err = listenOn(cfg, cfg.HTTPAddr); err != nil {
			return fmt.Errorf("http listen: %w", err)
		}
	}
	if cfg.RESPAddr != "" {
		if s.respLn, err = listenOn(cfg, cfg.RESPAddr); err != nil {
			s.closeListeners()
			return fmt.Errorf("resp listen: %w", err)
		}
	}
	if cfg.TLS != nil {
		// The handshake runs on each connection's first read, in its own
		// goroutine (bounded by ReadHeaderTimeout on HTTP).
		if s.httpLn != nil {
			s.httpLn = tls.NewListener(s.httpLn, cfg.TLS)
		}
		if s.respLn != nil {
			s.respLn = tls.NewListener(s.respLn, cfg.TLS)
		}
	}
	return nil
}

// errNoListener: a Config.Listen returned neither a listener nor an
// error.
var errNoListener = errors.New("server: Config.Listen returned no listener")

// listenOn is cfg.Listen on a TCP address, refusing a nil listener.
func listenOn(cfg Config, addr string) (net.Listener, error) {
	ln, err := cfg.Listen("tcp", addr)
	if err == nil && ln == nil {
		err = fmt.Errorf("%s: %w", addr, errNoListener)
	}
	return ln, err
}

// closeListeners closes the client listeners that no server owns yet.
func (s *Server) closeListeners() {
	if s.httpLn != nil && s.httpSrv == nil {
		s.httpLn.Close()
	}
	if s.respLn != nil && s.resp == nil {
		s.respLn.Close()
	}
}

// peerTransport builds the peer port's transport with cfg's Listen and
// Dial, as cluster.Start would with net.Listen and a net.Dialer; nil when
// Cluster.Transport is set (the caller's own).
func peerTransport(cfg Config) (*transport.Transport, error) {
	c := cfg.Cluster
	if c.Transport != nil {
		return nil, nil
	}
	bind := c.BindAddr
	if bind == "" {
		bind = cluster.DefaultConfig().BindAddr
	}
	ln, err := listenOn(cfg, bind)
	if err != nil {
		return nil, fmt.Errorf("peer listen on %s: %w", bind, err)
	}
	tc := transport.Config{
		Listener:         ln,
		Advertise:        c.Advertise,
		HandshakeTimeout: c.PeerHandshakeTimeout,
		MaxConns:         c.PeerMaxConns,
		ServerTLS:        c.PeerServerTLS,
		ClientTLS:        c.PeerClientTLS,
	}
	if c.Logger != nil {
		tc.Logger = c.Logger.Named("transport")
	}
	if dial := cfg.Dial; dial != nil {
		tc.Dial = func(ctx context.Context, addr string) (net.Conn, error) { return dial(ctx, "tcp", addr) }
	}
	tr, err := transport.New(tc)
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("cluster: transport: %w", err)
	}
	return tr, nil
}

// clientAddrs are the HTTP and RESP addresses clients should dial,
// from cfg and the bound listeners.
func (s *Server) clientAddrs(cfg Config) cluster.ClientAddrs {
	host := raftAdvertiseHost(cfg.Cluster)
	var a cluster.ClientAddrs
	if s.httpLn != nil {
		a.HTTP = advertiseAddr(cfg.HTTPAdvertise, s.httpLn.Addr(), host)
	}
	if s.respLn != nil {
		a.RESP = advertiseAddr(cfg.RESPAdvertise, s.respLn.Addr(), host)
	}
	return a
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
