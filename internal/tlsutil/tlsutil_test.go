package tlsutil

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func newCA(t *testing.T) *CA {
	t.Helper()
	ca, err := NewCA("test CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

func writeIssued(t *testing.T, ca *CA, dir, cn string) (string, string) {
	t.Helper()
	is, err := ca.Issue(cn, []string{"127.0.0.1"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cf, kf, err := is.WriteFiles(dir, cn)
	if err != nil {
		t.Fatal(err)
	}
	return cf, kf
}

// handshake runs one TLS handshake between server and client over
// loopback TCP and returns the certificates each saw from the other. (A
// net.Pipe would deadlock: in TLS 1.3 the client is done before the
// server refuses its certificate, and the server's alert then has no
// reader.)
func handshake(t *testing.T, server, client *tls.Config) (serverSaw, clientSaw []*x509.Certificate, err error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	type result struct {
		saw []*x509.Certificate
		err error
	}
	done := make(chan result, 1)
	go func() { // ends after one handshake (bounded by the deadline)
		c, err := ln.Accept()
		if err != nil {
			done <- result{err: err}
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		srv := tls.Server(c, server)
		err = srv.Handshake()
		done <- result{srv.ConnectionState().PeerCertificates, err}
	}()
	raw, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	raw.SetDeadline(time.Now().Add(10 * time.Second))
	c := client.Clone()
	c.ServerName = "127.0.0.1"
	cli := tls.Client(raw, c)
	cerr := cli.Handshake()
	if cerr != nil {
		raw.Close()
	}
	r := <-done
	if err := errors.Join(cerr, r.err); err != nil {
		return nil, nil, err
	}
	return r.saw, cli.ConnectionState().PeerCertificates, nil
}

// Mutual TLS between two nodes of one CA identifies each by its name; a
// certificate from another CA fails the handshake on either side.
func TestPeerConfigs(t *testing.T) {
	ca, other := newCA(t), newCA(t)
	dir := t.TempDir()
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	load := func(ca *CA, cn string) *KeyPair {
		cf, kf := writeIssued(t, ca, dir, cn)
		kp, err := NewKeyPair(cf, kf)
		if err != nil {
			t.Fatal(err)
		}
		return kp
	}
	s1, _ := PeerConfigs(load(ca, "n1"), pool)
	_, c2 := PeerConfigs(load(ca, "n2"), pool)
	_, cx := PeerConfigs(load(other, "n2"), pool)
	serverSaw, clientSaw, err := handshake(t, s1, c2)
	if err != nil {
		t.Fatal(err)
	}
	if NodeID(serverSaw[0]) != "n2" || NodeID(clientSaw[0]) != "n1" {
		t.Fatalf("server saw %q, client saw %q", NodeID(serverSaw[0]), NodeID(clientSaw[0]))
	}
	if _, _, err := handshake(t, s1, cx); err == nil {
		t.Fatal("a certificate from another CA was accepted")
	}
	if _, _, err := handshake(t, s1, ClientConfig(pool, nil)); err == nil {
		t.Fatal("a client without a certificate was accepted")
	}
	if _, _, err := handshake(t, s1, &tls.Config{RootCAs: pool, MaxVersion: tls.VersionTLS11}); err == nil {
		t.Fatal("TLS 1.1 was accepted")
	}
}

// Reload swaps the certificate for new handshakes; a failed one keeps the
// old.
func TestKeyPairReload(t *testing.T) {
	ca := newCA(t)
	dir := t.TempDir()
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	cf, kf := writeIssued(t, ca, dir, "first")
	kp, err := NewKeyPair(cf, kf)
	if err != nil {
		t.Fatal(err)
	}
	server := ServerConfig(kp, nil)
	client := ClientConfig(pool, nil)
	name := func() string {
		t.Helper()
		_, saw, err := handshake(t, server, client)
		if err != nil {
			t.Fatal(err)
		}
		return saw[0].Subject.CommonName
	}
	if got := name(); got != "first" {
		t.Fatalf("serving %q", got)
	}
	is, err := ca.Issue("second", []string{"127.0.0.1"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	// Replace both files, then reload.
	if err := os.WriteFile(cf, is.CertPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(kf, is.KeyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := kp.Reload(); err != nil {
		t.Fatal(err)
	}
	if got := name(); got != "second" {
		t.Fatalf("after reload serving %q", got)
	}
	// A half-written pair (the old key with the new certificate) is
	// refused and the served certificate stays.
	other, _ := ca.Issue("third", []string{"127.0.0.1"}, time.Hour)
	if err := os.WriteFile(cf, other.CertPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := kp.Reload(); !errors.Is(err, ErrKeyPair) {
		t.Fatalf("reload of a mismatched pair: %v", err)
	}
	if got := name(); got != "second" {
		t.Fatalf("after a failed reload serving %q", got)
	}
	// A whole pair the check refuses is not taken either.
	if err := os.WriteFile(kf, other.KeyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	onlySecond := func(leaf *x509.Certificate) error {
		if leaf.Subject.CommonName != "second" {
			return errors.New("wrong name")
		}
		return nil
	}
	if err := kp.ReloadIf(onlySecond); !errors.Is(err, ErrKeyPair) {
		t.Fatalf("reload of a refused pair: %v", err)
	}
	if got := name(); got != "second" {
		t.Fatalf("after a refused reload serving %q", got)
	}
	if err := kp.Reload(); err != nil || name() != "third" {
		t.Fatalf("plain reload: %v, serving %q", err, name())
	}
}

func TestClientFiles(t *testing.T) {
	ca := newCA(t)
	dir := t.TempDir()
	caFile, err := ca.WriteCert(dir, "ca")
	if err != nil {
		t.Fatal(err)
	}
	cf, kf := writeIssued(t, ca, dir, "c")
	tests := []struct {
		name              string
		caFile, cert, key string
		wantErr           bool
	}{
		{"CA only", caFile, "", "", false},
		{"CA and certificate", caFile, cf, kf, false},
		{"system roots and certificate", "", cf, kf, false},
		{"certificate without key", caFile, cf, "", true},
		{"missing CA", filepath.Join(dir, "nope"), "", "", true},
		{"CA file holding a key", kf, "", "", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, _, err := ClientFiles(tc.caFile, tc.cert, tc.key)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err %v, want error %v", err, tc.wantErr)
			}
			if err == nil && c.MinVersion != tls.VersionTLS12 {
				t.Fatalf("MinVersion %x", c.MinVersion)
			}
		})
	}
}
