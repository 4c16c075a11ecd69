package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	flag "github.com/spf13/pflag"

	"github.com/locknode/locknode/internal/tlsutil"
)

// TLS settings of serve and dev: the client ports (HTTP and RESP), the
// peer port (mutual TLS between nodes) and the mirror's Redis connection.

// serverTLSFlags are serve's TLS flags.
type serverTLSFlags struct {
	cert, key, clientCA             *string
	peerCert, peerKey, peerCA       *string
	mirrorCA, mirrorCert, mirrorKey *string
}

func addServerTLSFlags(fs *flag.FlagSet) serverTLSFlags {
	return serverTLSFlags{
		cert:     fs.String("tls-cert", envDefault("LOCKNODE_TLS_CERT", ""), "serve HTTP (https) and RESP over TLS with this certificate (PEM; with --tls-key); re-read on SIGHUP"),
		key:      fs.String("tls-key", envDefault("LOCKNODE_TLS_KEY", ""), "private key of --tls-cert (PEM); re-read on SIGHUP"),
		clientCA: fs.String("tls-client-ca", envDefault("LOCKNODE_TLS_CLIENT_CA", ""), "with --tls-cert: require HTTP and RESP clients to present a certificate signed by this CA (PEM)"),
		peerCert: fs.String("peer-tls-cert", envDefault("LOCKNODE_PEER_TLS_CERT", ""), "mutual TLS on the peer port: this node's certificate (PEM; its Common Name must be --id); re-read on SIGHUP"),
		peerKey:  fs.String("peer-tls-key", envDefault("LOCKNODE_PEER_TLS_KEY", ""), "private key of --peer-tls-cert (PEM); re-read on SIGHUP"),
		peerCA:   fs.String("peer-tls-ca", envDefault("LOCKNODE_PEER_TLS_CA", ""), "CA that signs every node's peer certificate (PEM); peers without one are refused at the handshake"),
		mirrorCA: fs.String("mirror-cacert", envDefault("LOCKNODE_MIRROR_CACERT", ""), "connect to the --mirror Redis over TLS, trusting this CA (PEM)"),
		mirrorCert: fs.String("mirror-cert", envDefault("LOCKNODE_MIRROR_CERT", ""),
			"client certificate (PEM) for a --mirror Redis that requires one (with --mirror-key; implies TLS)"),
		mirrorKey: fs.String("mirror-key", envDefault("LOCKNODE_MIRROR_KEY", ""), "private key of --mirror-cert (PEM)"),
	}
}

// tlsSetup is what the TLS flags turn into.
type tlsSetup struct {
	client                 *tls.Config // HTTP and RESP; nil: plain
	peerServer, peerClient *tls.Config // nil: plain TCP between nodes
	mirror                 *tls.Config // nil: as the --mirror URL says
	reloads                []reloadFunc
}

// reloadFunc re-reads one set of files on SIGHUP.
type reloadFunc struct {
	name string
	fn   func() error
}

var errTLSFlags = errors.New("TLS flags")

// build loads every file the flags name; a missing or bad one is an error
// before anything starts. id is the node's id, which its peer certificate
// must name.
func (f serverTLSFlags) build(id string) (tlsSetup, error) {
	var st tlsSetup
	if (*f.cert == "") != (*f.key == "") {
		return st, fmt.Errorf("%w: --tls-cert and --tls-key go together", errTLSFlags)
	}
	if *f.clientCA != "" && *f.cert == "" {
		return st, fmt.Errorf("%w: --tls-client-ca needs --tls-cert and --tls-key", errTLSFlags)
	}
	if *f.cert != "" {
		kp, err := tlsutil.NewKeyPair(*f.cert, *f.key)
		if err != nil {
			return st, err
		}
		var pool *x509.CertPool
		if *f.clientCA != "" {
			if pool, err = tlsutil.LoadCAPool(*f.clientCA); err != nil {
				return st, err
			}
		}
		st.client = tlsutil.ServerConfig(kp, pool)
		st.reloads = append(st.reloads, reloadFunc{"tls certificate", kp.Reload})
	}
	peer := []string{*f.peerCert, *f.peerKey, *f.peerCA}
	switch {
	case peer[0] == "" && peer[1] == "" && peer[2] == "":
	case peer[0] == "" || peer[1] == "" || peer[2] == "":
		return st, fmt.Errorf("%w: --peer-tls-cert, --peer-tls-key and --peer-tls-ca go together", errTLSFlags)
	default:
		kp, err := tlsutil.NewKeyPair(*f.peerCert, *f.peerKey)
		if err != nil {
			return st, err
		}
		// Other members know a node by its certificate's Common Name; a
		// wrong one would have every request it forwards refused.
		names := func(leaf *x509.Certificate) error {
			if got := tlsutil.NodeID(leaf); got != id {
				return fmt.Errorf("%w: the peer certificate names %q, not the node id %q", errTLSFlags, got, id)
			}
			return nil
		}
		if err := names(kp.Certificate().Leaf); err != nil {
			return st, err
		}
		ca, err := tlsutil.LoadCAPool(*f.peerCA)
		if err != nil {
			return st, err
		}
		st.peerServer, st.peerClient = tlsutil.PeerConfigs(kp, ca)
		st.reloads = append(st.reloads, reloadFunc{"peer tls certificate", func() error { return kp.ReloadIf(names) }})
	}
	if *f.mirrorCA != "" || *f.mirrorCert != "" || *f.mirrorKey != "" {
		c, kp, err := tlsutil.ClientFiles(*f.mirrorCA, *f.mirrorCert, *f.mirrorKey)
		if err != nil {
			return st, fmt.Errorf("mirror: %w", err)
		}
		st.mirror = c
		if kp != nil {
			st.reloads = append(st.reloads, reloadFunc{"mirror tls certificate", kp.Reload})
		}
	}
	return st, nil
}

// watchSIGHUP runs every reload whenever the process gets SIGHUP, until
// the returned stop is called. A failed reload is logged and keeps the
// files it had.
func watchSIGHUP(log hclog.Logger, reloads []reloadFunc) (stop func()) {
	if len(reloads) == 0 {
		return func() {}
	}
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGHUP)
	done, exited := make(chan struct{}), make(chan struct{})
	// Ends when stop closes done.
	go func() {
		defer close(exited)
		for {
			select {
			case <-done:
				return
			case <-ch:
			}
			for _, r := range reloads {
				if err := r.fn(); err != nil {
					log.Error("reload failed; keeping the previous files", "what", r.name, "error", err)
				} else {
					log.Info("reloaded", "what", r.name)
				}
			}
		}
	}()
	return func() {
		signal.Stop(ch)
		close(done)
		<-exited
	}
}

// devTLS is what `locknode dev --tls` generated (or found) in its data
// directory.
type devTLS struct {
	dir    string
	caFile string
	nodes  map[string][2]string // id -> cert, key
}

// devCertValidity: a dev cluster's data directory may be reused for a
// long time; its certificates are for loopback only.
const devCertValidity = 10 * 365 * 24 * time.Hour

// makeDevTLS creates dir/tls with a CA and one certificate per node
// (Common Name = node id, valid for host and localhost), or reuses the
// ones a previous run left there.
func makeDevTLS(dataDir, host string, ids []string) (*devTLS, error) {
	d := &devTLS{dir: filepath.Join(dataDir, "tls"), nodes: map[string][2]string{}}
	d.caFile = filepath.Join(d.dir, "ca.crt")
	all := true
	for _, id := range ids {
		c, k := filepath.Join(d.dir, id+".crt"), filepath.Join(d.dir, id+".key")
		d.nodes[id] = [2]string{c, k}
		all = all && pathExists(c) && pathExists(k)
	}
	if all && pathExists(d.caFile) {
		return d, nil
	}
	if err := os.MkdirAll(d.dir, 0o700); err != nil {
		return nil, err
	}
	ca, err := tlsutil.NewCA("locknode dev CA", devCertValidity)
	if err != nil {
		return nil, err
	}
	if _, err := ca.WriteCert(d.dir, "ca"); err != nil {
		return nil, err
	}
	hosts := []string{host, "localhost"}
	if host != "127.0.0.1" {
		hosts = append(hosts, "127.0.0.1")
	}
	for _, id := range ids {
		is, err := ca.Issue(id, hosts, devCertValidity)
		if err != nil {
			return nil, err
		}
		if _, _, err := is.WriteFiles(d.dir, id); err != nil {
			return nil, err
		}
	}
	return d, nil
}

func pathExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
