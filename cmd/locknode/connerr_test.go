package main

import (
	"crypto/tls"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"
)

// internalText finds what a user must never read in the CLI's errors:
// a Go package as a prefix, Go's type names, a bare EOF.
var internalText = regexp.MustCompile(`(^|: |\()(fsm|cluster|httpapi|redisbridge|client|api|auth|transport|json): |Go (struct|value)|of type |\bEOF\b`)

// A client that cannot talk to a node hears why, cause first, and the
// flag that fixes it: TLS trust, the certificate's names, a missing
// client certificate, http:// against a TLS node and https:// against a
// plain one, nothing listening, no quorum. Setup errors do not retry
// for long.
func TestConnectionErrorsNameTheCause(t *testing.T) {
	ca, peerCA := newTestCA(t, "clients"), newTestCA(t, "peers")
	tlsNode := startServe(t, append(tlsNodeArgs(t, ca, peerCA, "n1"), "--bootstrap")...)
	plainNode := startServe(t, "--id", "n9", "--data", t.TempDir(), "--log-level", "off", "--bootstrap",
		"--http-addr", "127.0.0.1:0", "--resp-addr", "127.0.0.1:0", "--raft-addr", "127.0.0.1:0")
	cliCert, cliKey := ca.issue("cli")

	// A TLS server whose certificate names another host only.
	is, err := ca.ca.Issue("elsewhere", []string{"other.example"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cf, kf, err := is.WriteFiles(ca.dir, "elsewhere")
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.LoadX509KeyPair(cf, kf)
	if err != nil {
		t.Fatal(err)
	}
	wrongName := httptest.NewUnstartedServer(http.NotFoundHandler())
	wrongName.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	wrongName.Config.ErrorLog = log.New(io.Discard, "", 0)
	wrongName.StartTLS()
	t.Cleanup(wrongName.Close)
	// A node that answers, but has no leader.
	noLeader := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(`{"code":"no_leader","message":"no leader reachable: node n1 (candidate) has had no leader for 3s: the cluster has no quorum or this node is cut off from it; a leader needs 2 of the 3 voters running and reaching each other"}` + "\n"))
	}))
	t.Cleanup(noLeader.Close)
	// Go's own TLS server answers plain HTTP with a 400 of its own.
	goTLS := httptest.NewUnstartedServer(http.NotFoundHandler())
	goTLS.Config.ErrorLog = log.New(io.Discard, "", 0)
	goTLS.StartTLS()
	t.Cleanup(goTLS.Close)

	withCerts := []string{"--cacert", ca.caFile, "--cert", cliCert, "--key", cliKey}
	waitFor(t, 30*time.Second, "the TLS node to elect itself", func() (bool, string) {
		code, _, stderr := execLine(append([]string{"status", "--endpoints", "https://" + tlsNode[2]}, withCerts...)...)
		return code == 0, stderr
	})
	for _, c := range []struct {
		name string
		args []string
		code int
		want []string // in order
	}{
		{"trusted, with a client certificate", append([]string{"--endpoints", "https://" + tlsNode[2]}, withCerts...), 0, nil},
		{"no --cacert", []string{"--endpoints", "https://" + tlsNode[2]}, 1,
			[]string{"TLS: the certificate of " + tlsNode[2] + " is not trusted", "--cacert FILE"}},
		{"no client certificate", []string{"--endpoints", "https://" + tlsNode[2], "--cacert", ca.caFile}, 1,
			[]string{"TLS: the node at " + tlsNode[2] + " refused the client certificate", "--cert FILE and --key FILE"}},
		{"http:// to a TLS node", []string{"--endpoints", "http://" + tlsNode[2]}, 1,
			[]string{"speaks HTTPS: use https://" + tlsNode[2]}},
		{"http:// to Go's TLS server", []string{"--endpoints", strings.Replace(goTLS.URL, "https://", "http://", 1)}, 1,
			[]string{"speaks HTTPS: use https://"}},
		{"https:// to a plain node", []string{"--endpoints", "https://" + plainNode[2], "--cacert", ca.caFile}, 1,
			[]string{"speaks plain HTTP, not HTTPS: use http://" + plainNode[2]}},
		{"certificate for another name", []string{"--endpoints", wrongName.URL, "--cacert", ca.caFile}, 1,
			[]string{"TLS: the certificate of", "is for other.example, not 127.0.0.1", "--endpoints"}},
		{"nothing listens", []string{"--endpoints", "127.0.0.1:1"}, 1,
			[]string{"nothing listens at 127.0.0.1:1", "--endpoints"}},
		{"no quorum", []string{"--endpoints", noLeader.URL}, 1,
			[]string{"no leader: node n1 (candidate) has had no leader for 3s", "2 of the 3 voters"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			code, _, stderr := execLine(append([]string{"status"}, c.args...)...)
			took := time.Since(start)
			if code != c.code {
				t.Fatalf("exit %d, want %d: %s", code, c.code, stderr)
			}
			if c.code == 0 {
				return
			}
			line := strings.TrimSpace(stderr)
			if !strings.HasPrefix(line, "locknode status: ") {
				t.Fatalf("stderr %q", stderr)
			}
			rest := line
			for _, w := range c.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("%q lacks %q (in order %q)", line, w, c.want)
				}
				rest = rest[i+len(w):]
			}
			if strings.Contains(line, "no node reachable") && !strings.Contains(c.name, "listens") {
				t.Errorf("%q blames reachability", line)
			}
			if m := internalText.FindString(strings.TrimPrefix(line, "locknode status: ")); m != "" {
				t.Errorf("%q shows an internal name (%q)", line, m)
			}
			if c.name != "no quorum" && c.name != "nothing listens" && took > 3*time.Second {
				t.Errorf("a setup error took %v to report (retried?)", took)
			}
		})
	}
}
