package server

import (
	"bufio"
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/cluster"
)

// fakeNet is a Listen and Dial that count what passes through them and
// hand out listeners made in advance (so a peer address is known before
// its node starts).
type fakeNet struct {
	mu       sync.Mutex
	ready    map[string]net.Listener // by address asked for
	asked    []string
	lns      map[string]*countingListener // the last one by address asked for
	order    []*countingListener          // in the order opened
	dials    atomic.Int64
	failAddr string // Listen on it fails
}

var errFakeListen = errors.New("fake listen refused")

func newFakeNet() *fakeNet {
	return &fakeNet{ready: map[string]net.Listener{}, lns: map[string]*countingListener{}}
}

// prepare listens on loopback now and returns the address; Listen on it
// returns that listener.
func (f *fakeNet) prepare(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ready[ln.Addr().String()] = ln
	return ln.Addr().String()
}

func (f *fakeNet) Listen(network, addr string) (net.Listener, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, addr)
	if addr == f.failAddr {
		return nil, errFakeListen
	}
	ln, ok := f.ready[addr]
	if !ok {
		var err error
		if ln, err = net.Listen(network, addr); err != nil {
			return nil, err
		}
	}
	cl := &countingListener{Listener: ln}
	f.lns[addr] = cl
	f.order = append(f.order, cl)
	return cl, nil
}

func (f *fakeNet) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	f.dials.Add(1)
	var d net.Dialer
	return d.DialContext(ctx, network, addr)
}

func (f *fakeNet) listener(addr string) *countingListener {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lns[addr]
}

type countingListener struct {
	net.Listener
	accepts atomic.Int64
	closed  atomic.Bool
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.accepts.Add(1)
	}
	return c, err
}

func (l *countingListener) Close() error {
	l.closed.Store(true)
	return l.Listener.Close()
}

func nodeConfig(t *testing.T, id, raftAddr string, peers []cluster.Peer, fn *fakeNet) Config {
	cfg := Config{Listen: fn.Listen, Dial: fn.Dial, Logger: hclog.NewNullLogger()}
	cfg.Cluster = cluster.DefaultConfig()
	cfg.Cluster.ID, cfg.Cluster.DataDir, cfg.Cluster.BindAddr = id, t.TempDir(), raftAddr
	cfg.Cluster.Bootstrap, cfg.Cluster.Peers = true, peers
	cfg.Cluster.Logger = hclog.NewNullLogger()
	return cfg
}

// Every port of a node is opened through Config.Listen and every peer
// connection through Config.Dial: a two-node cluster on a counting
// network elects a leader over it, and HTTP and RESP clients are
// accepted through it. A node without client addresses serves neither.
func TestListenDialSeam(t *testing.T) {
	fn := newFakeNet()
	a1, a2 := fn.prepare(t), fn.prepare(t)
	peers := []cluster.Peer{{ID: "n1", Addr: a1}, {ID: "n2", Addr: a2}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	c1 := nodeConfig(t, "n1", a1, peers, fn)
	c1.HTTPAddr, c1.RESPAddr = "127.0.0.1:0", "127.0.0.1:0"
	s1, err := Start(ctx, c1)
	if err != nil {
		t.Fatal(err)
	}
	defer s1.Close()
	s2, err := Start(ctx, nodeConfig(t, "n2", a2, peers, fn))
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if s2.HTTPAddr() != "" || s2.RESPAddr() != "" {
		t.Fatalf("n2 serves %q %q without client addresses", s2.HTTPAddr(), s2.RESPAddr())
	}
	if err := s1.Node().WaitLeader(ctx); err != nil {
		t.Fatalf("no leader over the counting network: %v", err)
	}
	if fn.dials.Load() == 0 {
		t.Fatal("the peers reached each other without Config.Dial")
	}
	// The leader dialed its follower, which accepted through Listen.
	if fn.listener(a1).accepts.Load()+fn.listener(a2).accepts.Load() == 0 {
		t.Fatal("no peer connection was accepted through Listen")
	}

	// n1 opens its HTTP, RESP and peer ports in that order, then n2 its
	// peer port.
	if want := []string{"127.0.0.1:0", "127.0.0.1:0", a1, a2}; strings.Join(fn.asked, " ") != strings.Join(want, " ") {
		t.Fatalf("Listen asked for %q, want %q", fn.asked, want)
	}
	httpLn, respLn := fn.order[0], fn.order[1]
	resp, err := http.Get("http://" + s1.HTTPAddr() + "/v1/status")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if httpLn.accepts.Load() == 0 {
		t.Fatal("the HTTP connection was not accepted through Listen")
	}
	conn, err := net.Dial("tcp", s1.RESPAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		t.Fatal(err)
	}
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil || line != "+PONG\r\n" {
		t.Fatalf("PING: %q %v", line, err)
	}
	if respLn.accepts.Load() == 0 {
		t.Fatal("the RESP connection was not accepted through Listen")
	}
}

// A port that cannot be opened fails Start with the cause, and leaves
// nothing open: the client listeners opened before it are closed.
func TestListenFailureClosesEverything(t *testing.T) {
	fn := newFakeNet()
	raft := fn.prepare(t)
	fn.failAddr = raft
	cfg := nodeConfig(t, "n1", raft, nil, fn)
	cfg.HTTPAddr = "127.0.0.1:0"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := Start(ctx, cfg)
	if err == nil {
		s.Close()
		t.Fatal("Start succeeded without its peer port")
	}
	if !errors.Is(err, errFakeListen) || !strings.Contains(err.Error(), "peer listen") {
		t.Fatalf("Start: %v; want the peer port's listen error", err)
	}
	if ln := fn.listener("127.0.0.1:0"); ln == nil || !ln.closed.Load() {
		t.Fatal("the HTTP listener opened before the failure was left open")
	}
}

// A Listen that returns neither a listener nor an error fails Start
// clearly instead of panicking.
func TestListenNilListener(t *testing.T) {
	cfg := DefaultConfig()
	cfg.HTTPAddr, cfg.RESPAddr = "127.0.0.1:0", "127.0.0.1:0"
	cfg.Cluster.ID, cfg.Cluster.DataDir, cfg.Cluster.Bootstrap = "n1", t.TempDir(), true
	cfg.Listen = func(network, addr string) (net.Listener, error) { return nil, nil }
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := Start(ctx, cfg)
	if err == nil {
		s.Close()
		t.Fatal("Start succeeded without listeners")
	}
	if !errors.Is(err, errNoListener) {
		t.Fatalf("Start: %v; want errNoListener", err)
	}
}

// Close and Kill may both be called, in any order, more than once; only
// the first acts, and the node is stopped afterwards.
func TestCloseKillOnce(t *testing.T) {
	cfg := DefaultConfig()
	cfg.HTTPAddr, cfg.RESPAddr = "127.0.0.1:0", "127.0.0.1:0"
	cfg.Cluster.ID, cfg.Cluster.DataDir, cfg.Cluster.Bootstrap = "n1", t.TempDir(), true
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Node().WaitLeader(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Kill(); err != nil {
		t.Fatalf("Kill: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close after Kill: %v", err)
	}
	if _, err := s.Node().TryAcquire(ctx, api.AcquireRequest{Key: "k", Owner: "o", TTLMs: 1000}); err == nil {
		t.Fatal("a killed node still takes locks")
	}
	if _, err := net.Dial("tcp", s.HTTPAddr()); err == nil {
		t.Fatal("the HTTP port still accepts after Kill")
	}
}

// Validate refuses what Start would, naming the field.
func TestValidate(t *testing.T) {
	ok := DefaultConfig()
	ok.Cluster.ID, ok.Cluster.DataDir = "n1", t.TempDir()
	if err := ok.Validate(); err != nil {
		t.Fatalf("a valid config: %v", err)
	}
	cases := map[string]func(c *Config){
		"no id":               func(c *Config) { c.Cluster.ID = "" },
		"advertise, no addr":  func(c *Config) { c.HTTPAddr, c.HTTPAdvertise = "", "h:1" },
		"resp advertise only": func(c *Config) { c.RESPAddr, c.RESPAdvertise = "", "h:1" },
		"negative timeout":    func(c *Config) { c.ShutdownTimeout = -time.Second },
		"bad http limit":      func(c *Config) { c.HTTP.MaxConns = -1 },
	}
	for name, mod := range cases {
		t.Run(name, func(t *testing.T) {
			c := ok
			mod(&c)
			if err := c.Validate(); err == nil {
				t.Fatal("accepted")
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if s, err := Start(ctx, c); err == nil {
				s.Close()
				t.Fatal("Start accepted it")
			}
		})
	}
}
