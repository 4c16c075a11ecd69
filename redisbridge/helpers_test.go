package redisbridge

import (
	"bufio"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/redis/go-redis/v9"

	"github.com/locknode/locknode/api"

	"github.com/locknode/locknode/redisbridge/resp"
)

// testServer starts a Server over a fresh fake backend on 127.0.0.1:0.
func testServer(t testing.TB, cfg Config) (*Server, *fakeBackend) {
	t.Helper()
	f := newFakeBackend(t)
	return testServerOn(t, f, cfg), f
}

func testServerOn(t testing.TB, b Backend, cfg Config) *Server {
	t.Helper()
	return testServerOnListener(t, b, cfg, listenLocal(t))
}

func testServerOnListener(t testing.TB, b Backend, cfg Config, ln net.Listener) *Server {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = hclog.New(&hclog.LoggerOptions{Output: testWriter{t}, Level: hclog.Debug})
	}
	s, err := New(b, cfg)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	// Ends when Close (in cleanup) closes the listener.
	go func() { served <- s.Serve(ln) }()
	eventually(t, 5*time.Second, "Serve to register its listener", func() bool { return s.Addr() == ln.Addr().String() })
	t.Cleanup(func() {
		s.Close()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
		if n := s.HandlerPanics(); n > 0 {
			t.Errorf("%d commands panicked (logged at ERROR with their stacks)", n)
		}
	})
	return s
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func goRedis(t testing.TB, s *Server, proto int) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: s.Addr(), Protocol: proto, MaxRetries: -1, DialTimeout: 2 * time.Second,
		ReadTimeout: 5 * time.Second, WriteTimeout: 5 * time.Second})
	t.Cleanup(func() { c.Close() })
	return c
}

// rawConn is a plain TCP client speaking RESP by hand.
type rawConn struct {
	t  testing.TB
	nc net.Conn
	br *bufio.Reader
}

func dialRaw(t testing.TB, s *Server) *rawConn {
	t.Helper()
	nc, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &rawConn{t: t, nc: nc, br: bufio.NewReader(nc)}
}

func (c *rawConn) send(s string) {
	c.t.Helper()
	// Some tests send tens of MiB, which a busy machine under -race reads
	// slowly: the deadline only bounds a hang.
	c.nc.SetWriteDeadline(time.Now().Add(time.Minute))
	if _, err := c.nc.Write([]byte(s)); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

// do sends a command (inline if given one string with spaces is fine, but
// args are sent as a multibulk) and returns the reply.
func (c *rawConn) do(args ...string) resp.Value {
	c.t.Helper()
	var b strings.Builder
	b.WriteString("*" + itoa(len(args)) + "\r\n")
	for _, a := range args {
		b.WriteString("$" + itoa(len(a)) + "\r\n" + a + "\r\n")
	}
	c.send(b.String())
	return c.read()
}

func (c *rawConn) read() resp.Value {
	c.t.Helper()
	c.nc.SetReadDeadline(time.Now().Add(30 * time.Second))
	v, err := resp.ReadValue(c.br)
	if err != nil {
		c.t.Fatalf("read reply: %v", err)
	}
	return v
}

// readRaw reads everything until the server closes the connection or
// quiet passes without data.
func (c *rawConn) readRaw(quiet time.Duration) string {
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		c.nc.SetReadDeadline(time.Now().Add(quiet))
		n, err := c.br.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			return b.String()
		}
	}
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func listenLocal(t testing.TB) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

func cmdBytes(args ...string) string {
	var b strings.Builder
	b.WriteString("*" + itoa(len(args)) + "\r\n")
	for _, a := range args {
		b.WriteString("$" + itoa(len(a)) + "\r\n" + a + "\r\n")
	}
	return b.String()
}

func apiReadOptions() api.ReadOptions { return api.ReadOptions{} }
