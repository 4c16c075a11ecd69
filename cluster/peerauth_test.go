package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/fsm"
	"github.com/locknode/locknode/internal/tlsutil"
	"github.com/locknode/locknode/transport"
)

// testPKI issues node certificates from one throwaway CA.
type testPKI struct {
	t    *testing.T
	ca   *tlsutil.CA
	pool *x509.CertPool
	dir  string
}

func newTestPKI(t *testing.T) *testPKI {
	t.Helper()
	ca, err := tlsutil.NewCA("locknode test CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	return &testPKI{t: t, ca: ca, pool: pool, dir: t.TempDir()}
}

// peerTLS returns mutual-TLS configs for a node named cn on 127.0.0.1.
func (p *testPKI) peerTLS(cn string) (server, client *tls.Config) {
	p.t.Helper()
	is, err := p.ca.Issue(cn, []string{"127.0.0.1"}, time.Hour)
	if err != nil {
		p.t.Fatal(err)
	}
	cf, kf, err := is.WriteFiles(p.dir, cn)
	if err != nil {
		p.t.Fatal(err)
	}
	kp, err := tlsutil.NewKeyPair(cf, kf)
	if err != nil {
		p.t.Fatal(err)
	}
	return tlsutil.PeerConfigs(kp, p.pool)
}

// newTLSCluster is newTestCluster with mutual TLS between the nodes, each
// node's certificate naming its id.
func newTLSCluster(t *testing.T, p *testPKI, n int) *testCluster {
	t.Helper()
	trs := map[string]*transport.Transport{}
	for i := range n {
		id := fmt.Sprintf("n%d", i+1)
		s, c := p.peerTLS(id)
		tr, err := transport.New(transport.Config{BindAddr: "127.0.0.1:0", ServerTLS: s, ClientTLS: c})
		if err != nil {
			t.Fatal(err)
		}
		trs[id] = tr
	}
	return newTestCluster(t, n, func(c *Config) {
		c.Transport = trs[c.ID]
		for i := range c.Peers {
			c.Peers[i].Addr = trs[c.Peers[i].ID].Addr().String()
		}
		c.BindAddr = c.Transport.Addr().String()
	})
}

// A peer with a certificate from the cluster's CA that is not a member
// gets no forwarded command, read index or membership change through,
// whichever node it asks; only a join naming itself is accepted.
func TestPeerRPCOnlyFromMembers(t *testing.T) {
	p := newTestPKI(t)
	tc := newTLSCluster(t, p, 3)
	ctx := ctxT(t, 60*time.Second)
	leader := tc.leader(10 * time.Second)
	if _, err := leader.TryAcquire(ctx, api.AcquireRequest{Key: "k", Owner: "o", TTLMs: 600000}); err != nil {
		t.Fatal(err)
	}
	srvTLS, cliTLS := p.peerTLS("intruder")
	intruder, err := transport.New(transport.Config{BindAddr: "127.0.0.1:0", ServerTLS: srvTLS, ClientTLS: cliTLS})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { intruder.Close() })
	// It answers as a peer, so that the leader's check before a join of
	// it passes (an error answer is one).
	intruder.Serve(func(context.Context, []byte) ([]byte, error) { return nil, errors.New("no") })

	force := &fsm.Command{Op: fsm.OpRelease, Key: "k", Force: true}
	tests := []struct {
		name string
		req  []byte
	}{
		{"forced release", append([]byte{rpcApply}, force.AppendBinary(nil)...)},
		{"read index", []byte{rpcReadIndex}},
		{"remove a member", appendStr([]byte{rpcRemove}, "n3")},
		{"join under another name", appendStr(appendStr([]byte{rpcJoin}, "n9"), "127.0.0.1:1")},
		{"node info", []byte{rpcNodeInfo}},
	}
	for _, n := range tc.nodes {
		for _, tt := range tests {
			t.Run(n.id+"/"+tt.name, func(t *testing.T) {
				resp, err := intruder.Call(ctx, n.Addr(), tt.req)
				if err == nil {
					t.Fatalf("accepted: %x", resp)
				}
				if !strings.Contains(err.Error(), "not a member") {
					t.Fatalf("error %v, want a refusal naming the reason", err)
				}
			})
		}
	}
	info, err := leader.Inspect(ctx, "k", api.ReadOptions{})
	if err != nil || len(info.Holders) != 1 {
		t.Fatalf("lock after the forged release: %+v %v", info, err)
	}
	if m := members(t, leader); len(m) != 3 {
		t.Fatalf("members %v", m)
	}

	// The same certificate may join under its own name.
	req := appendStr(appendStr([]byte{rpcJoin}, "intruder"), intruder.Addr().String())
	resp, err := intruder.Call(ctx, tc.follower().Addr(), req)
	if err != nil || len(resp) == 0 || resp[0] != stOK {
		t.Fatalf("join under its own name: %x %v", resp, err)
	}
	if m := members(t, leader); !m["intruder"] {
		t.Fatalf("members %v", m)
	}
}

// A node whose certificate comes from another CA cannot join: the
// handshake fails, and the cluster keeps its members.
func TestPeerJoinWithForeignCA(t *testing.T) {
	p := newTestPKI(t)
	tc := newTLSCluster(t, p, 3)
	other := newTestPKI(t)
	s, c := other.peerTLS("n4")
	tr, err := transport.New(transport.Config{BindAddr: "127.0.0.1:0", ServerTLS: s, ClientTLS: c})
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.ID = "n4"
	cfg.DataDir = filepath.Join(t.TempDir(), "n4")
	cfg.Transport = tr
	cfg.Join = []string{tc.nodes[0].Addr(), tc.nodes[1].Addr()}
	cfg.Logger = testLogger(t, "n4")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	n, err := Start(ctx, cfg)
	if err == nil {
		n.Kill()
		t.Fatal("a node with a certificate from another CA joined")
	}
	if m := members(t, tc.leader(10*time.Second)); len(m) != 3 || m["n4"] {
		t.Fatalf("members %v", m)
	}
}

// With peer TLS, a new node waiting to be added answers the leader's
// check before the join (it knows no members yet), without counting it
// as a refused RPC, and is added.
func TestPeerJoinChecked(t *testing.T) {
	p := newTestPKI(t)
	tc := newTLSCluster(t, p, 3)
	s, c := p.peerTLS("n4")
	tr, err := transport.New(transport.Config{BindAddr: "127.0.0.1:0", ServerTLS: s, ClientTLS: c})
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.ID = "n4"
	cfg.DataDir = t.TempDir()
	cfg.Transport = tr
	cfg.Logger = testLogger(t, "n4")
	n4, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n4.Kill() })
	ctx := ctxT(t, time.Minute)
	if err := tc.follower().AddVoter(ctx, "n4", n4.Addr()); err != nil {
		t.Fatalf("add n4: %v", err)
	}
	if got := counter(t, n4, n4.metrics.rpcRefused, rpcName(rpcNodeInfo)); got != 0 {
		t.Errorf("n4 refused %v node-info calls", got)
	}
	if m := members(t, tc.leader(10*time.Second)); len(m) != 4 || !m["n4"] {
		t.Fatalf("members %v", m)
	}
}
