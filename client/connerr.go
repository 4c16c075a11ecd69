package client

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/locknode/locknode/api"
)

// ConnCause says why a node could not be talked to at all.
type ConnCause int

// Causes of a ConnError. The first five are the client's configuration,
// not the node's health: retrying does not help.
const (
	ConnOther      ConnCause = iota
	ConnUntrusted            // TLS: the node's certificate is signed by a CA the client does not trust
	ConnWrongName            // TLS: the certificate is not for the address dialled
	ConnNeedsHTTPS           // an http:// endpoint whose node speaks TLS
	ConnNeedsHTTP            // an https:// endpoint whose node speaks plain HTTP
	ConnClientCert           // TLS: the node wants a client certificate it did not get or does not accept
	ConnBadCert              // TLS: the node's certificate is expired or otherwise invalid
	ConnRefused              // nothing listens at the address
	ConnNoHost               // the host name does not resolve
	ConnTimeout              // no answer in time
)

// ConnError is a failure to reach one endpoint, classified so that the
// message names the cause (a TLS trust problem, a scheme mismatch) rather
// than the symptom (EOF, "no leader"). Err is the underlying error.
type ConnError struct {
	Endpoint string
	Cause    ConnCause
	Err      error
	// Names are the names and addresses the node's certificate is for
	// (ConnWrongName).
	Names []string
}

// Config reports whether the failure comes from how the client is set
// up (trust, names, scheme, client certificate): another try fails alike.
func (e *ConnError) Config() bool {
	return e.Cause >= ConnUntrusted && e.Cause <= ConnBadCert
}

func (e *ConnError) Error() string {
	host := e.Endpoint
	if u, err := url.Parse(e.Endpoint); err == nil && u.Host != "" {
		host = u.Host
	}
	switch e.Cause {
	case ConnUntrusted:
		return fmt.Sprintf("TLS: the certificate of %s is not trusted: it is signed by a CA this client does not know (%v)", host, e.Err)
	case ConnWrongName:
		return fmt.Sprintf("TLS: the certificate of %s is for %s, not %s", host, strings.Join(e.Names, ", "), hostOnly(host))
	case ConnNeedsHTTPS:
		return fmt.Sprintf("the node at %s speaks HTTPS: use https://%s", host, host)
	case ConnNeedsHTTP:
		return fmt.Sprintf("the node at %s speaks plain HTTP, not HTTPS: use http://%s", host, host)
	case ConnClientCert:
		return fmt.Sprintf("TLS: the node at %s refused the client certificate (it wants one signed by its client CA) (%v)", host, e.Err)
	case ConnBadCert:
		return fmt.Sprintf("TLS: the certificate of %s is not valid (%v)", host, e.Err)
	case ConnRefused:
		return fmt.Sprintf("nothing listens at %s (connection refused)", host)
	case ConnNoHost:
		return fmt.Sprintf("cannot resolve %s (%v)", hostOnly(host), e.Err)
	case ConnTimeout:
		return fmt.Sprintf("%s did not answer in time", host)
	}
	return fmt.Sprintf("%s: %v", host, e.Err)
}

func (e *ConnError) Unwrap() error { return e.Err }

func hostOnly(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return hostport
}

// classify turns a transport failure of endpoint into a *ConnError when
// it can name the cause; other errors (ctx ended) pass through. An EOF
// from an http:// endpoint is checked with a TLS handshake: a node that
// completes one wants https://.
func classify(ctx context.Context, dial dialFunc, endpoint string, err error) error {
	if err == nil || ctx.Err() != nil {
		return err
	}
	if errors.As(err, new(*ConnError)) {
		return err
	}
	ce := &ConnError{Endpoint: endpoint, Err: unwrapURL(err)}
	var (
		unknownCA x509.UnknownAuthorityError
		hostErr   x509.HostnameError
		invalid   x509.CertificateInvalidError
		recHeader tls.RecordHeaderError
		alert     tls.AlertError
		dnsErr    *net.DNSError
		netErr    net.Error
	)
	switch {
	case errors.As(err, &unknownCA):
		ce.Cause = ConnUntrusted
	case errors.As(err, &hostErr):
		ce.Cause = ConnWrongName
		if c := hostErr.Certificate; c != nil {
			ce.Names = append(ce.Names, c.DNSNames...)
			for _, ip := range c.IPAddresses {
				ce.Names = append(ce.Names, ip.String())
			}
			if len(ce.Names) == 0 && c.Subject.CommonName != "" {
				ce.Names = append(ce.Names, c.Subject.CommonName)
			}
		}
		if len(ce.Names) == 0 {
			ce.Names = []string{"no name"}
		}
	case errors.As(err, &invalid):
		ce.Cause = ConnBadCert
	case errors.As(err, &recHeader), strings.Contains(err.Error(), "server gave HTTP response to HTTPS client"):
		ce.Cause = ConnNeedsHTTP
	case errors.As(err, &alert), isRemoteTLSAlert(err):
		ce.Cause = ConnClientCert
	case errors.As(err, &dnsErr):
		ce.Cause = ConnNoHost
	case errors.Is(err, syscall.ECONNREFUSED):
		ce.Cause = ConnRefused
	case errors.As(err, &netErr) && netErr.Timeout():
		ce.Cause = ConnTimeout
	case strings.HasPrefix(endpoint, "http://") && (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)):
		if speaksTLS(ctx, dial, endpoint) {
			ce.Cause = ConnNeedsHTTPS
		}
	}
	return ce
}

// isRemoteTLSAlert: crypto/tls reports a peer's alert as an unexported
// type whose text starts "remote error: tls:" (a missing or refused
// client certificate).
func isRemoteTLSAlert(err error) bool {
	s := err.Error()
	return strings.Contains(s, "remote error: tls: certificate required") ||
		strings.Contains(s, "remote error: tls: bad certificate") ||
		strings.Contains(s, "remote error: tls: unknown certificate authority")
}

func unwrapURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// dialFunc opens a connection as net.Dialer.DialContext does.
type dialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// probeDial is how the TLS probe reaches an endpoint: through the dialer
// of the client's own transport when it has one, so that the probe goes
// where the requests go (a custom dialer: a tunnel, a socket wrapper, an
// in-memory network), else through a plain net.Dialer.
func probeDial(hc *http.Client) dialFunc {
	if hc != nil {
		switch t := hc.Transport.(type) {
		case *h1Transport:
			return t.dialer.DialContext
		case *http.Transport:
			if t.DialContext != nil {
				return t.DialContext
			}
		}
	}
	var d net.Dialer
	return d.DialContext
}

// speaksTLS reports whether endpoint's host:port, reached through dial,
// completes the first step of a TLS handshake (its server hello). It
// checks no certificate: it only tells a TLS port from a plain one.
func speaksTLS(ctx context.Context, dial dialFunc, endpoint string) bool {
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	raw, err := dial(ctx, "tcp", u.Host)
	if err != nil {
		return false
	}
	defer raw.Close()
	c := tls.Client(raw, &tls.Config{InsecureSkipVerify: true, ServerName: u.Hostname()}) //nolint:gosec // a probe: nothing is sent over it
	err = c.HandshakeContext(ctx)
	if err == nil {
		return true
	}
	// A node that wants a client certificate ends the handshake with an
	// alert, after its hello: it speaks TLS too.
	return isRemoteTLSAlert(err)
}

// unreachable is the end of a call no endpoint answered: the last
// endpoint's cause first, then the operation and how often it was tried.
// It is api.ErrNoLeader to errors.Is (callers and the CLI's exit codes
// branch on it) and unwraps to the cause (a *ConnError).
type unreachable struct {
	op       string
	attempts int
	last     error
}

func (u *unreachable) Error() string {
	tries := "attempts"
	if u.attempts == 1 {
		tries = "attempt"
	}
	return fmt.Sprintf("%s (%s: no node reachable after %d %s)", api.ClientText(u.last), u.op, u.attempts, tries)
}

func (u *unreachable) Unwrap() []error { return []error{api.ErrNoLeader, u.last} }
