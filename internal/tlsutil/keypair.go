package tlsutil

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
)

// Errors of this package.
var (
	ErrNoCertificates = errors.New("tlsutil: no certificates in file")
	ErrKeyPair        = errors.New("tlsutil: bad key pair")
)

// MinVersion is the lowest TLS version locknode speaks, on every port.
const MinVersion = tls.VersionTLS12

// KeyPair is a certificate and key read from PEM files, swapped whole by
// Reload so a handshake never sees a certificate with another's key.
type KeyPair struct {
	certFile, keyFile string
	cur               atomic.Pointer[tls.Certificate]
}

// NewKeyPair reads certFile and keyFile (PEM).
func NewKeyPair(certFile, keyFile string) (*KeyPair, error) {
	kp := &KeyPair{certFile: certFile, keyFile: keyFile}
	if err := kp.Reload(); err != nil {
		return nil, err
	}
	return kp, nil
}

// Reload re-reads the files. On error the current certificate stays.
func (kp *KeyPair) Reload() error { return kp.ReloadIf(nil) }

// ReloadIf is Reload that also keeps the current certificate when check
// (if not nil) refuses the new one's leaf.
func (kp *KeyPair) ReloadIf(check func(leaf *x509.Certificate) error) error {
	c, err := tls.LoadX509KeyPair(kp.certFile, kp.keyFile)
	if err != nil {
		return fmt.Errorf("%w: %s, %s: %w", ErrKeyPair, kp.certFile, kp.keyFile, err)
	}
	if c.Leaf == nil && len(c.Certificate) > 0 {
		if c.Leaf, err = x509.ParseCertificate(c.Certificate[0]); err != nil {
			return fmt.Errorf("%w: %s: %w", ErrKeyPair, kp.certFile, err)
		}
	}
	if check != nil {
		if err := check(c.Leaf); err != nil {
			return fmt.Errorf("%w: %s: %w", ErrKeyPair, kp.certFile, err)
		}
	}
	kp.cur.Store(&c)
	return nil
}

// Certificate returns the current certificate.
func (kp *KeyPair) Certificate() *tls.Certificate { return kp.cur.Load() }

func (kp *KeyPair) getCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return kp.cur.Load(), nil
}

func (kp *KeyPair) getClientCertificate(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
	return kp.cur.Load(), nil
}

// LoadCAPool reads the PEM certificates in file into a pool.
func LoadCAPool(file string) (*x509.CertPool, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("tlsutil: CA file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("%w: %s", ErrNoCertificates, file)
	}
	return pool, nil
}

// ServerConfig serves kp's certificate, TLS 1.2 or later. With clientCAs
// set, a client must present a certificate signed by one of them (mutual
// TLS); the handshake fails otherwise.
func ServerConfig(kp *KeyPair, clientCAs *x509.CertPool) *tls.Config {
	c := &tls.Config{
		MinVersion:     MinVersion,
		GetCertificate: kp.getCertificate,
	}
	if clientCAs != nil {
		c.ClientCAs = clientCAs
		c.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return c
}

// ClientConfig trusts rootCAs (nil: the system's) and, when kp is set,
// presents kp's certificate to servers that ask for one.
func ClientConfig(rootCAs *x509.CertPool, kp *KeyPair) *tls.Config {
	c := &tls.Config{MinVersion: MinVersion, RootCAs: rootCAs}
	if kp != nil {
		c.GetClientCertificate = kp.getClientCertificate
	}
	return c
}

// ClientFiles is ClientConfig from files, for command-line clients:
// caFile "" trusts the system's roots; certFile and keyFile both or
// neither.
func ClientFiles(caFile, certFile, keyFile string) (*tls.Config, *KeyPair, error) {
	var pool *x509.CertPool
	if caFile != "" {
		var err error
		if pool, err = LoadCAPool(caFile); err != nil {
			return nil, nil, err
		}
	}
	if (certFile == "") != (keyFile == "") {
		return nil, nil, fmt.Errorf("%w: a client certificate needs both the certificate and the key file", ErrKeyPair)
	}
	var kp *KeyPair
	if certFile != "" {
		var err error
		if kp, err = NewKeyPair(certFile, keyFile); err != nil {
			return nil, nil, err
		}
	}
	return ClientConfig(pool, kp), kp, nil
}

// PeerConfigs are the server and client sides of mutual TLS between
// nodes: both present kp's certificate and require the other side's to be
// signed by ca.
func PeerConfigs(kp *KeyPair, ca *x509.CertPool) (server, client *tls.Config) {
	return ServerConfig(kp, ca), ClientConfig(ca, kp)
}

// NodeID is the node id a verified peer certificate names: its Subject
// Common Name.
func NodeID(cert *x509.Certificate) string {
	if cert == nil {
		return ""
	}
	return cert.Subject.CommonName
}
