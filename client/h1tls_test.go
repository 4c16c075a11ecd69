package client

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// With a TLS configuration, https requests take the HTTP/1.1 fast path:
// one connection for sequential requests, and a connection the server
// closed while pooled is replaced without failing the request.
func TestH1TransportTLS(t *testing.T) {
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		io.WriteString(w, r.Method+" "+string(b))
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.StartTLS()
	defer srv.Close()
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())

	rt := newTransport(4, &tls.Config{RootCAs: pool})
	h1 := rt.(*h1Transport)
	h1.staleAfter = 0 // look at every pooled connection before reuse
	hc := &http.Client{Transport: rt}
	do := func(method, body string) string {
		t.Helper()
		req, err := http.NewRequestWithContext(context.Background(), method, srv.URL+"/x", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if !h1.handles(req) {
			t.Fatal("https request not on the fast path")
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	for i := range 10 {
		if got := do("POST", "b"); got != "POST b" {
			t.Fatalf("request %d: %q", i, got)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Fatalf("%d connections for 10 sequential requests", n)
	}
	srv.CloseClientConnections()
	deadline := time.Now().Add(10 * time.Second)
	for conns.Load() == 1 {
		if got := do("POST", "c"); got != "POST c" {
			t.Fatalf("after the server closed the pooled connection: %q", got)
		}
		if time.Now().After(deadline) {
			t.Fatal("no new connection after the server closed the old one")
		}
	}
	// A client that does not trust the server's CA is refused.
	bad := &http.Client{Transport: newTransport(4, &tls.Config{RootCAs: x509.NewCertPool()})}
	if resp, err := bad.Get(srv.URL); err == nil {
		resp.Body.Close()
		t.Fatal("untrusted server accepted")
	}
}
