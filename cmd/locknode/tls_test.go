package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/redis/go-redis/v9"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/client"
	"github.com/locknode/locknode/fsm"
	"github.com/locknode/locknode/internal/tlsutil"
	"github.com/locknode/locknode/transport"
)

// program finds an outside program; it skips the test without it, unless
// LOCKNODE_CI=1, where a missing program fails it.
func program(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("LOCKNODE_CI") == "1" {
			t.Fatalf("%s not found (LOCKNODE_CI=1): %v", name, err)
		}
		t.Skipf("%s not installed", name)
	}
	return p
}

// pythonWithRedis finds a python3 that can import redis (redis-py).
func pythonWithRedis(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"python3", "/usr/bin/python3"} {
		if path, err := exec.LookPath(p); err == nil && exec.Command(path, "-c", "import redis").Run() == nil {
			return path
		}
	}
	if os.Getenv("LOCKNODE_CI") == "1" {
		t.Fatal("no python3 with the redis module (LOCKNODE_CI=1)")
	}
	t.Skip("no python3 with the redis module")
	return ""
}

// testCA is a throwaway CA writing its files into a temp dir.
type testCA struct {
	t      *testing.T
	ca     *tlsutil.CA
	dir    string
	caFile string
}

func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	ca, err := tlsutil.NewCA(name, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	f, err := ca.WriteCert(dir, "ca")
	if err != nil {
		t.Fatal(err)
	}
	return &testCA{t: t, ca: ca, dir: dir, caFile: f}
}

// issue writes cn's certificate and key (valid for 127.0.0.1) and
// returns their paths.
func (c *testCA) issue(cn string) (certFile, keyFile string) {
	c.t.Helper()
	is, err := c.ca.Issue(cn, []string{"127.0.0.1", "localhost"}, time.Hour)
	if err != nil {
		c.t.Fatal(err)
	}
	cf, kf, err := is.WriteFiles(c.dir, cn)
	if err != nil {
		c.t.Fatal(err)
	}
	return cf, kf
}

func (c *testCA) pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(c.ca.Cert)
	return p
}

// clientTLS trusts the CA and presents cn's certificate.
func (c *testCA) clientTLS(cn string) *tls.Config {
	c.t.Helper()
	cf, kf := c.issue(cn)
	cert, err := tls.LoadX509KeyPair(cf, kf)
	if err != nil {
		c.t.Fatal(err)
	}
	return &tls.Config{RootCAs: c.pool(), Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
}

// tlsNodeArgs are serve's flags for node id with TLS on every port:
// clients need a certificate from ca, peers one from peerCA.
func tlsNodeArgs(t *testing.T, ca, peerCA *testCA, id string) []string {
	cf, kf := ca.issue(id + "-client-port")
	pcf, pkf := peerCA.issue(id)
	return []string{"--id", id, "--data", t.TempDir(), "--log-level", "off",
		"--http-addr", "127.0.0.1:0", "--resp-addr", "127.0.0.1:0", "--raft-addr", "127.0.0.1:0",
		"--tls-cert", cf, "--tls-key", kf, "--tls-client-ca", ca.caFile,
		"--peer-tls-cert", pcf, "--peer-tls-key", pkf, "--peer-tls-ca", peerCA.caFile}
}

// startTLSCluster starts three serve nodes with TLS on every port: n1
// bootstraps, n2 and n3 join over mutual TLS.
func startTLSCluster(t *testing.T, ca, peerCA *testCA) [][]string {
	t.Helper()
	n1 := startServe(t, append(tlsNodeArgs(t, ca, peerCA, "n1"), "--bootstrap")...)
	n2 := startServe(t, append(tlsNodeArgs(t, ca, peerCA, "n2"), "--join", n1[4])...)
	n3 := startServe(t, append(tlsNodeArgs(t, ca, peerCA, "n3"), "--join", n2[4])...)
	return [][]string{n1, n2, n3}
}

// tlsStatus reads a node's status over https with a client certificate.
func tlsStatus(t *testing.T, c *client.Client) api.Status {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := c.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func tlsClient(t *testing.T, cfg *tls.Config, httpAddr string) *client.Client {
	t.Helper()
	c, err := client.New(client.Config{Endpoints: []string{"https://" + httpAddr}, TLS: cfg})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Every client port speaks TLS and requires a client certificate from the
// CA; real clients (curl, redis-cli, redis-py, go-redis, the Go client and
// the CLI) all see the same locks.
func TestServeTLSClients(t *testing.T) {
	ca, peerCA := newTestCA(t, "client CA"), newTestCA(t, "peer CA")
	nodes := startTLSCluster(t, ca, peerCA)
	cliCert, cliKey := ca.issue("app")
	ctx := context.Background()

	// Go client: take a lock through n2.
	gc := tlsClient(t, ca.clientTLS("go-client"), nodes[1][2])
	waitFor(t, 15*time.Second, "3 members", func() (bool, string) {
		st := tlsStatus(t, gc)
		return len(st.Members) == 3, fmt.Sprint(st.Members)
	})
	l, err := gc.TryLock(ctx, "go/lock", client.WithTTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}

	// The Go client reads what the earlier clients wrote; only what they
	// wrote (a client missing from this machine is skipped, outside CI).
	var written []string
	tests := []struct {
		name string
		run  func(t *testing.T, n []string)
	}{
		{"curl", func(t *testing.T, n []string) {
			curl := program(t, "curl")
			out, err := exec.Command(curl, "-s", "--fail-with-body", "--cacert", ca.caFile, "--cert", cliCert, "--key", cliKey,
				"--json", `{"key":"curl/lock","owner":"curl","ttl_ms":60000}`, "https://"+n[2]+"/v1/locks/try").CombinedOutput()
			var lease api.Lease
			if err != nil || json.Unmarshal(out, &lease) != nil || lease.Fence == 0 {
				t.Fatalf("curl acquire: %v %s", err, out)
			}
			// Without a client certificate the handshake fails.
			if out, err := exec.Command(curl, "-s", "--cacert", ca.caFile, "https://"+n[2]+"/v1/status").CombinedOutput(); err == nil {
				t.Fatalf("curl without a client certificate: %s", out)
			}
			written = append(written, "curl/lock")
		}},
		{"redis-cli", func(t *testing.T, n []string) {
			cli := program(t, "redis-cli")
			host, port, _ := net.SplitHostPort(n[3])
			args := []string{"--tls", "--cacert", ca.caFile, "--cert", cliCert, "--key", cliKey, "-h", host, "-p", port}
			out, err := exec.Command(cli, append(args, "SET", "cli/lock", "tok", "NX", "PX", "60000")...).CombinedOutput()
			if err != nil || strings.TrimSpace(string(out)) != "OK" {
				t.Fatalf("redis-cli SET: %v %s", err, out)
			}
			out, err = exec.Command(cli, append(args, "GET", "go/lock")...).CombinedOutput()
			if err != nil || strings.TrimSpace(string(out)) != l.Owner() {
				t.Fatalf("redis-cli GET go/lock: %v %q, want %q", err, out, l.Owner())
			}
			written = append(written, "cli/lock")
		}},
		{"redis-py", func(t *testing.T, n []string) {
			py := pythonWithRedis(t)
			host, port, _ := net.SplitHostPort(n[3])
			script := `
import sys, redis
r = redis.Redis(host=sys.argv[1], port=int(sys.argv[2]), ssl=True, ssl_ca_certs=sys.argv[3],
                ssl_certfile=sys.argv[4], ssl_keyfile=sys.argv[5])
assert r.set("py/lock", "tok", nx=True, px=60000)
lk = r.lock("py/lock2", timeout=60)
assert lk.acquire(blocking=False)
lk.release()
print(r.get("cli/lock").decode())
`
			out, err := exec.Command(py, "-c", script, host, port, ca.caFile, cliCert, cliKey).CombinedOutput()
			if err != nil || strings.TrimSpace(string(out)) != "tok" {
				t.Fatalf("redis-py: %v %s", err, out)
			}
			written = append(written, "py/lock")
		}},
		{"go-redis", func(t *testing.T, n []string) {
			rdb := redis.NewClient(&redis.Options{Addr: n[3], TLSConfig: ca.clientTLS("go-redis"), MaxRetries: -1})
			defer rdb.Close()
			if ok, err := rdb.SetNX(ctx, "goredis/lock", "tok", time.Minute).Result(); err != nil || !ok {
				t.Fatalf("SET NX: %v %v", ok, err)
			}
			for _, k := range written {
				if _, err := rdb.Get(ctx, k).Result(); err != nil {
					t.Fatalf("GET %s: %v", k, err)
				}
			}
			// Plain TCP and TLS without a client certificate are refused.
			plain := redis.NewClient(&redis.Options{Addr: n[3], MaxRetries: -1, DialTimeout: 2 * time.Second, ReadTimeout: 2 * time.Second})
			defer plain.Close()
			if err := plain.Ping(ctx).Err(); err == nil {
				t.Fatal("plain RESP PING answered")
			}
			anon := redis.NewClient(&redis.Options{Addr: n[3], TLSConfig: &tls.Config{RootCAs: ca.pool()}, MaxRetries: -1})
			defer anon.Close()
			if err := anon.Ping(ctx).Err(); err == nil {
				t.Fatal("RESP PING without a client certificate answered")
			}
		}},
		{"locknode CLI", func(t *testing.T, n []string) {
			var out strings.Builder
			code := run([]string{"locks", "--endpoints", n[2], "--cacert", ca.caFile, "--cert", cliCert, "--key", cliKey}, &out, io.Discard)
			if code != 0 {
				t.Fatalf("locknode locks: exit %d", code)
			}
			for _, k := range append([]string{"go/lock", "goredis/lock"}, written...) {
				if !strings.Contains(out.String(), k) {
					t.Fatalf("locknode locks lacks %s:\n%s", k, out.String())
				}
			}
		}},
	}
	for i, tc := range tests {
		n := nodes[i%len(nodes)]
		if !t.Run(tc.name, func(t *testing.T) { tc.run(t, n) }) {
			break // later clients look for earlier clients' locks
		}
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// plainStream is a raft stream layer over plain TCP that starts every
// connection with the peer port's raft type byte: what an attacker
// without a certificate can send.
type plainStream struct {
	closed chan struct{}
	once   atomic.Bool
}

func (s *plainStream) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	c, err := net.DialTimeout("tcp", string(addr), timeout)
	if err != nil {
		return nil, err
	}
	if _, err := c.Write([]byte{0x01}); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}
func (s *plainStream) Accept() (net.Conn, error) { <-s.closed; return nil, net.ErrClosed }
func (s *plainStream) Close() error {
	if s.once.CompareAndSwap(false, true) {
		close(s.closed)
	}
	return nil
}
func (s *plainStream) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1} }

func rpcStr(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// With mutual TLS on the peer port, forged raft and RPC frames from a
// plain TCP client (AppendEntries with a higher term and a lock in it,
// TimeoutNow, a join, a forced release, a member removal) are refused at
// the handshake and change nothing.
func TestServePeerForgedFrames(t *testing.T) {
	ca, peerCA := newTestCA(t, "client CA"), newTestCA(t, "peer CA")
	nodes := startTLSCluster(t, ca, peerCA)
	gc := tlsClient(t, ca.clientTLS("app"), nodes[0][2])
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	waitFor(t, 15*time.Second, "3 members", func() (bool, string) {
		st := tlsStatus(t, gc)
		return len(st.Members) == 3, fmt.Sprint(st.Members)
	})
	held, err := gc.TryLock(ctx, "held", client.WithTTL(10*time.Minute))
	if err != nil {
		t.Fatal(err)
	}

	stream := &plainStream{closed: make(chan struct{})}
	rt := raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{Stream: stream, MaxPool: 1, Timeout: 3 * time.Second})
	defer rt.Close()
	plainRPC, err := transport.New(transport.Config{BindAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer plainRPC.Close()

	forged := &fsm.Command{Op: fsm.OpAcquire, Key: "forged", Owner: "mallory", TTL: 600000, Time: time.Now().UnixMilli()}
	force := &fsm.Command{Op: fsm.OpRelease, Key: "held", Force: true}
	// Node-to-node RPC kinds (cluster/rpc.go): 1 apply, 3 join, 4 remove.
	rpcs := []struct {
		name string
		req  []byte
	}{
		{"join", rpcStr(rpcStr([]byte{3}, "mallory"), "127.0.0.1:1")},
		{"forced release", append([]byte{1}, force.AppendBinary(nil)...)},
		{"acquire", append([]byte{1}, forged.AppendBinary(nil)...)},
		{"remove", rpcStr([]byte{4}, "n3")},
	}
	before := tlsStatus(t, gc)
	for _, n := range nodes {
		target := raft.ServerAddress(n[4])
		hdr := raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("mallory"), Addr: []byte("127.0.0.1:1")}
		t.Run(n[1]+"/AppendEntries", func(t *testing.T) {
			req := &raft.AppendEntriesRequest{
				RPCHeader: hdr, Term: before.Term + 100, PrevLogEntry: before.CommitIndex, PrevLogTerm: before.Term,
				Entries:           []*raft.Log{{Index: before.CommitIndex + 1, Term: before.Term + 100, Type: raft.LogCommand, Data: forged.AppendBinary(nil)}},
				LeaderCommitIndex: before.CommitIndex + 1,
			}
			var resp raft.AppendEntriesResponse
			if err := rt.AppendEntries(raft.ServerID(n[1]), target, req, &resp); err == nil {
				t.Fatalf("AppendEntries answered: %+v", resp)
			}
		})
		t.Run(n[1]+"/TimeoutNow", func(t *testing.T) {
			var resp raft.TimeoutNowResponse
			if err := rt.TimeoutNow(raft.ServerID(n[1]), target, &raft.TimeoutNowRequest{RPCHeader: hdr}, &resp); err == nil {
				t.Fatalf("TimeoutNow answered: %+v", resp)
			}
		})
		for _, r := range rpcs {
			t.Run(n[1]+"/"+r.name, func(t *testing.T) {
				cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				defer cancel()
				if resp, err := plainRPC.Call(cctx, n[4], r.req); err == nil {
					t.Fatalf("answered: %x", resp)
				}
			})
		}
	}

	after := tlsStatus(t, gc)
	if len(after.Members) != 3 {
		t.Fatalf("members after the forged frames: %+v", after.Members)
	}
	if info, err := gc.Inspect(ctx, "held", api.ReadOptions{}); err != nil || len(info.Holders) != 1 || info.Holders[0].Fence != held.Fence() {
		t.Fatalf("held lock after the forged frames: %+v %v", info, err)
	}
	if info, err := gc.Inspect(ctx, "forged", api.ReadOptions{}); err == nil && len(info.Holders) > 0 {
		t.Fatalf("forged lock granted: %+v", info)
	}
	if after.Term > before.Term+1 {
		// One natural election can happen on a loaded machine; a forged
		// term would be before.Term+100 or more.
		t.Fatalf("term went from %d to %d", before.Term, after.Term)
	}
}

// A node whose peer certificate comes from another CA cannot join: its
// serve gives up, and the cluster keeps its members.
func TestServeJoinWithForeignCA(t *testing.T) {
	ca, peerCA := newTestCA(t, "client CA"), newTestCA(t, "peer CA")
	n1 := startServe(t, append(tlsNodeArgs(t, ca, peerCA, "n1"), "--bootstrap")...)
	other := newTestCA(t, "another peer CA")
	args := append(tlsNodeArgs(t, ca, other, "n2"), "--join", n1[4], "--join-timeout", "3s")
	var stderr strings.Builder
	if code := runServe(context.Background(), args, io.Discard, &stderr); code == 0 {
		t.Fatal("serve with a foreign peer certificate exited 0")
	}
	st := tlsStatus(t, tlsClient(t, ca.clientTLS("app"), n1[2]))
	if len(st.Members) != 1 {
		t.Fatalf("members %+v", st.Members)
	}
}

// A mirror into a Redis that speaks only TLS and wants a client
// certificate.
func TestServeMirrorTLS(t *testing.T) {
	srv := program(t, "redis-server")
	ca := newTestCA(t, "redis CA")
	rcert, rkey := ca.issue("redis")
	dir := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := fmt.Sprint(ln.Addr().(*net.TCPAddr).Port)
	ln.Close() // redis-server needs a port number; a race for it fails the start below, loudly
	cmd := exec.Command(srv, "--port", "0", "--tls-port", port, "--bind", "127.0.0.1",
		"--tls-cert-file", rcert, "--tls-key-file", rkey, "--tls-ca-cert-file", ca.caFile, "--tls-auth-clients", "yes",
		"--save", "", "--appendonly", "no", "--dir", dir, "--loglevel", "warning")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }() // ends when redis-server exits (cleanup kills it)
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-done })
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + port, TLSConfig: ca.clientTLS("test"), MaxRetries: -1})
	defer rdb.Close()
	waitFor(t, 10*time.Second, "redis-server over TLS", func() (bool, string) {
		err := rdb.Ping(context.Background()).Err()
		return err == nil, fmt.Sprint(err)
	})

	mcert, mkey := ca.issue("mirror")
	n := startServe(t, "--id", "n1", "--data", t.TempDir(), "--bootstrap", "--log-level", "off",
		"--http-addr", "127.0.0.1:0", "--resp-addr", "127.0.0.1:0", "--raft-addr", "127.0.0.1:0",
		"--mirror", "rediss://127.0.0.1:"+port, "--mirror-cacert", ca.caFile, "--mirror-cert", mcert, "--mirror-key", mkey)
	if code := postJSON(t, n[2], "/v1/locks/try", `{"key":"m","owner":"tok","ttl_ms":60000}`); code != 200 {
		t.Fatalf("acquire: %d", code)
	}
	waitFor(t, 15*time.Second, "the lock in the TLS redis", func() (bool, string) {
		v, err := rdb.Get(context.Background(), "m").Result()
		return v == "tok", fmt.Sprint(v, err)
	})
}

func TestTLSFlagsRejected(t *testing.T) {
	ca := newTestCA(t, "CA")
	cf, kf := ca.issue("n1")
	base := []string{"serve", "--id", "n1", "--data", t.TempDir(), "--log-level", "off"}
	tests := []struct {
		name string
		args []string
	}{
		{"cert without key", []string{"--tls-cert", cf}},
		{"client CA without cert", []string{"--tls-client-ca", ca.caFile}},
		{"missing cert file", []string{"--tls-cert", cf + ".missing", "--tls-key", kf}},
		{"peer cert without CA", []string{"--peer-tls-cert", cf, "--peer-tls-key", kf}},
		{"peer cert naming another node", []string{"--id", "n2", "--peer-tls-cert", cf, "--peer-tls-key", kf, "--peer-tls-ca", ca.caFile}},
		{"CA file without certificates", []string{"--peer-tls-cert", cf, "--peer-tls-key", kf, "--peer-tls-ca", kf}},
		{"mirror TLS without a mirror", []string{"--mirror-cacert", ca.caFile}},
		{"client cert without key", []string{"--mirror", "rediss://127.0.0.1:1", "--mirror-cert", cf}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stderr strings.Builder
			if code := run(append(append([]string{}, base...), tc.args...), io.Discard, &stderr); code != 2 {
				t.Fatalf("exit %d, want 2: %s", code, stderr.String())
			}
		})
	}
}

func TestPeerPortExposed(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:7000": false, "[::1]:7000": false, "localhost:7000": false, "127.0.0.2:7000": false,
		"0.0.0.0:7000": true, "[::]:7000": true, ":7000": true, "10.0.0.5:7000": true, "node1.example:7000": true,
	} {
		if got := beyondLoopback(addr); got != want {
			t.Errorf("beyondLoopback(%q) = %v, want %v", addr, got, want)
		}
	}
}

// SIGHUP runs every reload; the process survives it.
func TestSIGHUPReloads(t *testing.T) {
	var calls atomic.Int32
	got := make(chan struct{}, 1)
	stop := watchSIGHUP(hclog.NewNullLogger(), []reloadFunc{{"test", func() error {
		calls.Add(1)
		select {
		case got <- struct{}{}:
		default:
		}
		return nil
	}}})
	defer stop()
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	select {
	case <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("no reload after SIGHUP")
	}
}

// `locknode dev --tls` serves TLS on HTTP and RESP with the CA it leaves
// in the data directory, and says how to connect.
func TestDevTLS(t *testing.T) {
	dir := t.TempDir()
	lines, stop := startDev(t, "--nodes", "3", "--data", dir, "--tls")
	defer stop()
	caFile := filepath.Join(dir, "tls", "ca.crt")
	pool, err := tlsutil.LoadCAPool(caFile)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(client.Config{Endpoints: []string{"https://" + lines[1][2]}, TLS: &tls.Config{RootCAs: pool}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	l, err := c.TryLock(ctx, "dev/tls", client.WithTTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: lines[2][3], TLSConfig: &tls.Config{RootCAs: pool}, MaxRetries: -1})
	defer rdb.Close()
	if v, err := rdb.Get(ctx, "dev/tls").Result(); err != nil || v != l.Owner() {
		t.Fatalf("GET over TLS: %q %v", v, err)
	}
	// Plain HTTP is not served.
	conn, err := net.Dial("tcp", lines[0][2])
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET /v1/status HTTP/1.1\r\nHost: x\r\n\r\n")
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	b, _ := io.ReadAll(conn)
	if strings.Contains(string(b), `"leader"`) {
		t.Fatalf("plain HTTP answered: %s", b)
	}
}

// dev --tls tells how to connect: curl, redis-cli and the CLI, each with
// the CA file and the first node's addresses.
func TestPrintDevConnectTLS(t *testing.T) {
	listen := func() net.Listener {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		return ln
	}
	p := listenAddrs{listen(), listen()}
	var out strings.Builder
	printDevConnect(&out, &devTLS{caFile: "/d/tls/ca.crt"}, true, "", nil, p)
	_, rport, _ := net.SplitHostPort(p.RESPAddr())
	for _, want := range []string{
		"curl --cacert /d/tls/ca.crt https://" + p.HTTPAddr() + "/v1/status",
		"redis-cli --tls --cacert /d/tls/ca.crt -h 127.0.0.1 -p " + rport + " PING",
		"locknode status --cacert /d/tls/ca.crt --endpoints https://" + p.HTTPAddr(),
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("missing %q in:\n%s", want, out.String())
		}
	}
}
