package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/internal/tlsutil"
)

// nodeLogLevel is --log-level of every locknode process (-node-log-level).
var nodeLogLevel = "warn"

// nodePprofBase, if not 0, gives node i of a cluster --pprof on
// 127.0.0.1:nodePprofBase+i (-node-pprof-base), for profiling a workload.
var nodePprofBase int

// lnNode is one `locknode serve` process of a cluster.
type lnNode struct {
	id, raft, http, resp string
	data                 string
	cert, key            string // with -tls
	proc                 *proc
	logN                 int // restarts, for log file names
}

// lnTLS runs every locknode cluster with TLS on every port (-tls).
var lnTLS bool

// lnCluster is a 3-node locknode cluster of separate processes on
// loopback, with the default (fsync on) configuration.
type lnCluster struct {
	bin   string
	extra []string // more serve flags, on every node
	dir   string
	nodes []*lnNode
	hc    *http.Client
	// With -tls: the CA's file and a client configuration trusting it.
	caFile string
	tls    *tls.Config
}

func newLNCluster(bin, dir string, n int) (*lnCluster, error) {
	ports, err := freePorts(3 * n)
	if err != nil {
		return nil, err
	}
	c := &lnCluster{bin: bin, dir: dir, hc: &http.Client{Timeout: 10 * time.Second}}
	var ca *tlsutil.CA
	if lnTLS {
		if ca, err = tlsutil.NewCA("lockbench CA", 24*time.Hour); err != nil {
			return nil, err
		}
		if c.caFile, err = ca.WriteCert(dir, "ca"); err != nil {
			return nil, err
		}
		pool := x509.NewCertPool()
		pool.AddCert(ca.Cert)
		c.tls = &tls.Config{RootCAs: pool, MinVersion: tlsutil.MinVersion}
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.TLSClientConfig = c.tls
		c.hc.Transport = tr
	}
	for i := 0; i < n; i++ {
		nd := &lnNode{
			id:   fmt.Sprintf("n%d", i+1),
			raft: fmt.Sprintf("127.0.0.1:%d", ports[3*i]),
			http: fmt.Sprintf("127.0.0.1:%d", ports[3*i+1]),
			resp: fmt.Sprintf("127.0.0.1:%d", ports[3*i+2]),
		}
		nd.data = filepath.Join(dir, nd.id)
		if err := os.MkdirAll(nd.data, 0o755); err != nil {
			return nil, err
		}
		if ca != nil {
			is, err := ca.Issue(nd.id, []string{"127.0.0.1"}, 24*time.Hour)
			if err != nil {
				return nil, err
			}
			if nd.cert, nd.key, err = is.WriteFiles(dir, nd.id); err != nil {
				return nil, err
			}
		}
		c.nodes = append(c.nodes, nd)
	}
	return c, nil
}

func (c *lnCluster) peers() string {
	var ps []string
	for _, n := range c.nodes {
		ps = append(ps, n.id+"="+n.raft)
	}
	return strings.Join(ps, ",")
}

// argv is the exact command line of node i (recorded in the results).
func (c *lnCluster) argv(i int) []string {
	n := c.nodes[i]
	argv := []string{c.bin, "serve", "--id", n.id, "--data", n.data, "--raft-addr", n.raft,
		"--http-addr", n.http, "--resp-addr", n.resp, "--bootstrap", "--peers", c.peers(), "--log-level", nodeLogLevel}
	if nodePprofBase != 0 {
		argv = append(argv, "--pprof", fmt.Sprintf("127.0.0.1:%d", nodePprofBase+i))
	}
	argv = append(argv, c.extra...)
	if c.tls != nil {
		argv = append(argv, "--tls-cert", n.cert, "--tls-key", n.key,
			"--peer-tls-cert", n.cert, "--peer-tls-key", n.key, "--peer-tls-ca", c.caFile)
	}
	return argv
}

// scheme is the HTTP API's URL scheme.
func (c *lnCluster) scheme() string {
	if c.tls != nil {
		return "https://"
	}
	return "http://"
}

// startNode starts node i and waits until it prints its address line.
func (c *lnCluster) startNode(ctx context.Context, i int) error {
	n := c.nodes[i]
	lines := make(chan string, 16)
	n.logN++
	p, err := startProc("locknode-"+n.id, filepath.Join(c.dir, fmt.Sprintf("%s.%d.log", n.id, n.logN)), c.argv(i), nil, lines)
	if err != nil {
		return err
	}
	n.proc = p
	t := time.NewTimer(60 * time.Second)
	defer t.Stop()
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				b, _ := os.ReadFile(p.log.Name())
				return fmt.Errorf("locknode %s exited during start-up: %s", n.id, tail(string(b), 600))
			}
			if strings.HasPrefix(l, "node ") {
				return nil
			}
		case <-t.C:
			return fmt.Errorf("locknode %s: no address line after 60s", n.id)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// start starts every node concurrently (bootstrap needs the peers up to
// elect) and waits for a leader known to all.
func (c *lnCluster) start(ctx context.Context) error {
	errs := make(chan error, len(c.nodes))
	for i := range c.nodes {
		// Ends when the node printed its address line or failed.
		go func() { errs <- c.startNode(ctx, i) }()
	}
	var first error
	for range c.nodes {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	if first != nil {
		return first
	}
	if err := c.waitHealthy(ctx, 60*time.Second); err != nil {
		return err
	}
	return c.waitTopVersion(ctx, 60*time.Second)
}

// waitTopVersion waits until every node runs the highest cluster version
// its binary has (activated by the leader within seconds of the start),
// so that every workload measures what the release does once upgraded,
// not the forms it keeps for a rolling upgrade.
func (c *lnCluster) waitTopVersion(ctx context.Context, timeout time.Duration) error {
	return waitFor(ctx, timeout, "locknode cluster version", func(ctx context.Context) error {
		for i, n := range c.nodes {
			st, err := c.status(ctx, i)
			if err != nil {
				return err
			}
			_, hi, ok := strings.Cut(st.ClusterVersions, "..")
			if !ok {
				continue // a binary from before cluster versions
			}
			if top, err := strconv.ParseUint(hi, 10, 32); err == nil && uint64(st.ClusterVersion) < top {
				return fmt.Errorf("node %s at cluster version %d of %d", n.id, st.ClusterVersion, top)
			}
		}
		return nil
	})
}

func (c *lnCluster) status(ctx context.Context, i int) (api.Status, error) {
	var st api.Status
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, c.scheme()+c.nodes[i].http+"/v1/status", nil)
	resp, err := c.hc.Do(req)
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return st, fmt.Errorf("status %d", resp.StatusCode)
	}
	return st, json.NewDecoder(resp.Body).Decode(&st)
}

// waitHealthy waits until every running node names the same leader and
// the cluster has all members.
func (c *lnCluster) waitHealthy(ctx context.Context, timeout time.Duration) error {
	return waitFor(ctx, timeout, "locknode cluster", func(ctx context.Context) error {
		leader := ""
		for i, n := range c.nodes {
			if n.proc == nil || n.proc.exited() {
				return fmt.Errorf("node %s not running", n.id)
			}
			st, err := c.status(ctx, i)
			if err != nil {
				return err
			}
			if st.Leader == "" || (leader != "" && st.Leader != leader) || len(st.Members) != len(c.nodes) {
				return fmt.Errorf("node %s: leader %q, %d members", n.id, st.Leader, len(st.Members))
			}
			leader = st.Leader
		}
		return nil
	})
}

// leader returns the index of the node every live node names as leader.
func (c *lnCluster) leader(ctx context.Context) (int, error) {
	for i, n := range c.nodes {
		if n.proc == nil || n.proc.exited() {
			continue
		}
		st, err := c.status(ctx, i)
		if err != nil || st.Leader == "" {
			continue
		}
		for j, m := range c.nodes {
			if m.id == st.Leader {
				return j, nil
			}
		}
	}
	return -1, errors.New("no leader known")
}

// waitCaughtUp waits until node i has applied at least what the leader
// had applied when the wait began.
func (c *lnCluster) waitCaughtUp(ctx context.Context, i int, timeout time.Duration) error {
	if err := c.waitHealthy(ctx, timeout); err != nil {
		return err
	}
	l, err := c.leader(ctx)
	if err != nil {
		return err
	}
	lst, err := c.status(ctx, l)
	if err != nil {
		return err
	}
	return waitFor(ctx, timeout, "node catch-up", func(ctx context.Context) error {
		st, err := c.status(ctx, i)
		if err != nil {
			return err
		}
		if st.AppliedIndex < lst.AppliedIndex {
			return fmt.Errorf("applied %d < %d", st.AppliedIndex, lst.AppliedIndex)
		}
		return nil
	})
}

func (c *lnCluster) kill9(i int) {
	if p := c.nodes[i].proc; p != nil {
		p.kill(syscall.SIGKILL, 0)
	}
}

func (c *lnCluster) stop() {
	for i := range c.nodes {
		if p := c.nodes[i].proc; p != nil && !p.exited() {
			p.kill(syscall.SIGTERM, 5*time.Second)
		}
	}
}

func (c *lnCluster) httpURLs(first int) []string {
	var out []string
	for k := range c.nodes {
		out = append(out, c.scheme()+c.nodes[(first+k)%len(c.nodes)].http)
	}
	return out
}

// latestSnapshot returns the size in bytes and raft index of the newest
// snapshot under node i's data directory (0, 0 if none).
func (c *lnCluster) latestSnapshot(i int) (size int64, index uint64) {
	dir := filepath.Join(c.nodes[i].data, "snapshots")
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if !e.IsDir() || strings.HasSuffix(e.Name(), ".tmp") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name(), "meta.json"))
		if err != nil {
			continue
		}
		var meta struct{ Index uint64 }
		if json.Unmarshal(b, &meta) != nil {
			continue
		}
		if meta.Index > index {
			index = meta.Index
			size = dirSize(filepath.Join(dir, e.Name()))
		}
	}
	return size, index
}
