package transport

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"math/big"
	"net"
	"sync/atomic"
	"testing"
	"time"
)

// testTLS returns server and client configs for mutual TLS on 127.0.0.1,
// both signed by one throwaway CA.
func testTLS(t *testing.T) (server, client *tls.Config) {
	t.Helper()
	key := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	caKey := key()
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "locknode test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	nodeKey := key()
	nodeTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "node"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	nodeDER, err := x509.CreateCertificate(rand.Reader, nodeTmpl, ca, &nodeKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	cert := tls.Certificate{Certificate: [][]byte{nodeDER}, PrivateKey: nodeKey}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	server = &tls.Config{Certificates: []tls.Certificate{cert}, ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS13}
	client = &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: pool, MinVersion: tls.VersionTLS13}
	return server, client
}

func TestMutualTLS(t *testing.T) {
	serverTLS, clientTLS := testTLS(t)
	withTLS := func(c *Config) { c.ServerTLS, c.ClientTLS = serverTLS, clientTLS }

	t.Run("rpc", func(t *testing.T) {
		srv := newTransport(t, withTLS)
		srv.Serve(echo)
		cli := newTransport(t, withTLS)
		got, err := cli.Call(context.Background(), srv.Addr().String(), []byte("secret"))
		if err != nil || string(got) != "echo:secret" {
			t.Fatalf("got %q, %v", got, err)
		}
	})
	t.Run("raft cluster", func(t *testing.T) {
		nodes := startRaftCluster(t, 3, withTLS)
		applyOnLeader(t, nodes, "x")
	})
	tests := []struct {
		name string
		cfg  func(*Config)
	}{
		{"plaintext client", nil},
		{"client without certificate", func(c *Config) { c.ClientTLS = &tls.Config{RootCAs: clientTLS.RootCAs} }},
		{"client not trusting the server", func(c *Config) { c.ClientTLS = &tls.Config{Certificates: clientTLS.Certificates} }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := newTransport(t, withTLS)
			srv.Serve(echo)
			cli := newTransport(t, tc.cfg)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if got, err := cli.Call(ctx, srv.Addr().String(), []byte("x")); err == nil {
				t.Fatalf("call succeeded: %q", got)
			}
		})
	}
}

// A handler learns who called over TLS, and that nobody is known over
// plain TCP.
func TestPeerCertificate(t *testing.T) {
	serverTLS, clientTLS := testTLS(t)
	whoami := func(ctx context.Context, _ []byte) ([]byte, error) {
		cert, secured := PeerCertificate(ctx)
		switch {
		case !secured:
			return []byte("plain"), nil
		case cert == nil:
			return []byte("anonymous"), nil
		}
		return []byte(cert.Subject.CommonName), nil
	}
	tests := []struct {
		name string
		srv  func(*Config)
		cli  func(*Config)
		want string
	}{
		{"plain", nil, nil, "plain"},
		{"mutual TLS", func(c *Config) { c.ServerTLS = serverTLS }, func(c *Config) { c.ClientTLS = clientTLS }, "node"},
		{"server TLS only", func(c *Config) {
			c.ServerTLS = serverTLS.Clone()
			c.ServerTLS.ClientAuth = tls.NoClientCert
		}, func(c *Config) { c.ClientTLS = &tls.Config{RootCAs: clientTLS.RootCAs} }, "anonymous"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := newTransport(t, tc.srv)
			srv.Serve(whoami)
			cli := newTransport(t, tc.cli)
			got, err := cli.Call(context.Background(), srv.Addr().String(), nil)
			if err != nil || string(got) != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// Over TLS the handshake comes first: a peer that starts with a type
// byte and a frame in clear is cut off without an answer.
func TestTLSHandshakeFirst(t *testing.T) {
	serverTLS, _ := testTLS(t)
	var called atomic.Bool
	srv := newTransport(t, func(c *Config) { c.ServerTLS = serverTLS })
	srv.Serve(func(context.Context, []byte) ([]byte, error) { called.Store(true); return nil, nil })
	c, err := net.Dial("tcp", srv.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// Type byte, then a request frame in clear.
	c.Write([]byte{typeRPC, 0, 0, 0, 9, byte(kindRequest), 0, 0, 0, 0, 0, 0, 0, 1})
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	b, err := io.ReadAll(c)
	if len(b) > 0 && b[0] != 0x15 { // a TLS alert record is all it may send
		t.Fatalf("answer %x", b)
	}
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatal("connection left open")
	}
	if called.Load() {
		t.Fatal("handler ran")
	}
}
