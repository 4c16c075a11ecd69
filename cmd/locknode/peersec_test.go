package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/client"
	"github.com/locknode/locknode/fsm"
	"github.com/locknode/locknode/transport"
)

func TestPeerSecurityRule(t *testing.T) {
	tests := []struct {
		name                     string
		bind                     string
		peerTLS, users, insecure bool
		refused                  bool
		warn                     string // a word of the warning; "" none
	}{
		{"loopback, open", "127.0.0.1:7000", false, false, false, false, "any process on this host"},
		{"localhost, open", "localhost:7000", false, false, false, false, "any process on this host"},
		{"loopback with TLS", "127.0.0.1:7000", true, true, false, false, ""},
		{"wildcard", "0.0.0.0:7000", false, false, false, true, ""},
		{"IPv6 wildcard", "[::]:7000", false, false, false, true, ""},
		{"no host", ":7000", false, false, false, true, ""},
		{"network address", "10.0.0.1:7000", false, false, false, true, ""},
		{"host name", "node1.example:7000", false, false, false, true, ""},
		{"network address with TLS", "10.0.0.1:7000", true, false, false, false, ""},
		{"network address with TLS and users", "10.0.0.1:7000", true, true, false, false, ""},
		{"network address, insecure", "10.0.0.1:7000", false, false, true, false, "beyond loopback"},
		{"users on loopback", "127.0.0.1:7000", false, true, false, true, ""},
		{"users on loopback, insecure", "127.0.0.1:7000", false, true, true, false, "--insecure-peer"},
		{"users beyond loopback, insecure", "0.0.0.0:7000", false, true, true, false, "beyond loopback"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			warn, err := peerSecurity(tc.bind, tc.peerTLS, tc.users, tc.insecure)
			if tc.refused {
				if !errors.Is(err, errInsecurePeer) {
					t.Fatalf("not refused: %v (warning %q)", err, warn)
				}
				for _, want := range []string{"--peer-tls-cert", "--insecure-peer", "LOCKNODE_INSECURE_PEER", tc.bind} {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("the refusal does not say %s: %v", want, err)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			if (tc.warn == "") != (warn == "") || !strings.Contains(warn, tc.warn) {
				t.Fatalf("warning %q, want one with %q", warn, tc.warn)
			}
		})
	}
}

// serve refuses to open the peer port beyond loopback without peer TLS,
// and refuses --users without it; --insecure-peer (or its variable)
// overrides both with a warning; on loopback it starts with a warning.
func TestServePeerPortNeedsTLSOrInsecure(t *testing.T) {
	usersPath := filepath.Join(t.TempDir(), "users.acl")
	if err := os.WriteFile(usersPath, []byte(cmdTestUsers), 0o600); err != nil {
		t.Fatal(err)
	}
	base := func(raft string) []string {
		return []string{"--id", "n1", "--data", t.TempDir(), "--bootstrap",
			"--http-addr", "127.0.0.1:0", "--resp-addr", "127.0.0.1:0", "--raft-addr", raft}
	}
	refused := func(t *testing.T, args []string, want ...string) {
		t.Helper()
		var stderr syncBuffer
		if code := runServe(context.Background(), args, io.Discard, &stderr); code != 2 {
			t.Fatalf("serve %q: exit %d, want 2: %s", args, code, stderr.String())
		}
		for _, w := range append(want, "--peer-tls-cert", "--insecure-peer", "LOCKNODE_INSECURE_PEER") {
			if !strings.Contains(stderr.String(), w) {
				t.Errorf("the refusal does not say %s: %s", w, stderr.String())
			}
		}
	}
	t.Run("wildcard refused", func(t *testing.T) {
		refused(t, base("0.0.0.0:0"), "beyond loopback")
	})
	if ip := nonLoopbackIPv4(); ip != "" {
		t.Run("network address refused", func(t *testing.T) {
			refused(t, base(net.JoinHostPort(ip, "0")), "beyond loopback")
		})
	}
	t.Run("users refused", func(t *testing.T) {
		refused(t, append(base("127.0.0.1:0"), "--users", usersPath), "--users")
	})
	t.Run("wildcard with --insecure-peer", func(t *testing.T) {
		// The advertised address must name a port: take a free one.
		ln, err := net.Listen("tcp", "0.0.0.0:0")
		if err != nil {
			t.Fatal(err)
		}
		port := fmt.Sprint(ln.Addr().(*net.TCPAddr).Port)
		ln.Close()
		var logs syncBuffer
		n := startServeTo(t, &logs, append(base("0.0.0.0:"+port), "--advertise", "127.0.0.1:"+port, "--insecure-peer")...)
		if n[4] != "127.0.0.1:"+port {
			t.Fatalf("raft address %s", n[4])
		}
		if !hasLogLine(logs.String(), "[WARN]", "--insecure-peer", "beyond loopback", "raft_addr=0.0.0.0:"+port) {
			t.Fatalf("no warning:\n%s", logs.String())
		}
	})
	t.Run("users with LOCKNODE_INSECURE_PEER", func(t *testing.T) {
		t.Setenv("LOCKNODE_INSECURE_PEER", "true")
		var logs syncBuffer
		startServeTo(t, &logs, append(base("127.0.0.1:0"), "--users", usersPath)...)
		if !hasLogLine(logs.String(), "[WARN]", "--insecure-peer", "any process on this host") {
			t.Fatalf("no warning:\n%s", logs.String())
		}
	})
	t.Run("loopback warns", func(t *testing.T) {
		var logs syncBuffer
		startServeTo(t, &logs, base("127.0.0.1:0")...)
		if !hasLogLine(logs.String(), "[WARN]", "the peer port has no TLS", "any process on this host") {
			t.Fatalf("no warning:\n%s", logs.String())
		}
	})
}

// nonLoopbackIPv4 is one of this machine's addresses beyond loopback, or
// "" if it has none.
func nonLoopbackIPv4() string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return ""
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
			return n.IP.String()
		}
	}
	return ""
}

// hasLogLine reports whether one line of logs holds every part.
func hasLogLine(logs string, parts ...string) bool {
	for _, l := range strings.Split(logs, "\n") {
		ok := true
		for _, p := range parts {
			ok = ok && strings.Contains(l, p)
		}
		if ok {
			return true
		}
	}
	return false
}

// `dev --users` closes the peer ports with mutual TLS of its own: a plain
// TCP request there is refused, where a dev cluster without users answers
// it; the client ports stay plain.
func TestDevUsersPeerTLS(t *testing.T) {
	usersPath := filepath.Join(t.TempDir(), "users.acl")
	if err := os.WriteFile(usersPath, []byte(cmdTestUsers), 0o600); err != nil {
		t.Fatal(err)
	}
	plain, err := transport.New(transport.Config{BindAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	// Node-to-node RPC kinds (cluster/rpc.go): 2 read index, 4 remove.
	readIndex := []byte{2}
	call := func(addr string, req []byte) error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err := plain.Call(ctx, addr, req)
		return err
	}

	open, stopOpen := startDev(t, "--nodes", "1")
	if err := call(open[0][4], readIndex); err != nil {
		t.Fatalf("dev without users: plain peer request refused: %v", err)
	}
	stopOpen()

	lines, stop := startDev(t, "--nodes", "2", "--users", usersPath)
	defer stop()
	for _, m := range lines {
		if err := call(m[4], readIndex); err == nil {
			t.Fatalf("%s: plain peer request answered", m[1])
		}
		if err := call(m[4], rpcStr([]byte{4}, "n2")); err == nil {
			t.Fatalf("%s: plain member removal answered", m[1])
		}
	}
	var st api.Status
	if err := json.Unmarshal([]byte(adminGet(t, "http://"+lines[0][2]+"/v1/status")), &st); err != nil || len(st.Members) != 2 {
		t.Fatalf("members after the plain requests: %+v %v", st.Members, err)
	}
}

// A forced release that reaches a follower's RESP port (DEL of a held
// lock) is audited on the follower with the client's address; the
// leader audits what arrived over its peer port: that forwarded command,
// the join, and a forced release sent straight to the port by a plain
// TCP client.
func TestServeAuditsForcedReleasesAndPeerPort(t *testing.T) {
	var logs [2]syncBuffer
	n1 := startServeTo(t, &logs[0], "--id", "n1", "--data", t.TempDir(), "--bootstrap",
		"--http-addr", "127.0.0.1:0", "--resp-addr", "127.0.0.1:0", "--raft-addr", "127.0.0.1:0")
	n2 := startServeTo(t, &logs[1], "--id", "n2", "--data", t.TempDir(), "--join", n1[4],
		"--http-addr", "127.0.0.1:0", "--resp-addr", "127.0.0.1:0", "--raft-addr", "127.0.0.1:0")
	nodes := [][]string{n1, n2}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	gc, err := client.New(client.Config{Endpoints: []string{"http://" + n1[2], "http://" + n2[2]}})
	if err != nil {
		t.Fatal(err)
	}
	var leader, follower int
	waitFor(t, 20*time.Second, "2 members and a leader", func() (bool, string) {
		st, err := gc.Status(ctx)
		if err != nil {
			return false, err.Error()
		}
		leader, follower = 0, 1
		if st.Leader == "n2" {
			leader, follower = 1, 0
		}
		return len(st.Members) == 2 && st.Leader != "", fmt.Sprintf("%+v", st)
	})
	// n1 took n2's join on its peer port (as leader, or forwarded it).
	waitFor(t, 10*time.Second, "the join audited on n1", func() (bool, string) {
		return hasLogLine(logs[0].String(), "audit", "event=member_add", "via=peer", "member=n2", "remote=127.0.0.1:"), logs[0].String()
	})

	if _, err := gc.TryLock(ctx, "audit/held", client.WithTTL(10*time.Minute)); err != nil {
		t.Fatal(err)
	}
	// A raw connection: the audit names the client's side of it.
	conn, err := net.Dial("tcp", nodes[follower][3])
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	fmt.Fprintf(conn, "*2\r\n$3\r\nDEL\r\n$%d\r\n%s\r\n", len("audit/held"), "audit/held")
	if line, err := bufio.NewReader(conn).ReadString('\n'); err != nil || line != ":1\r\n" {
		t.Fatalf("DEL on the follower: %q %v", line, err)
	}
	clientAddr := conn.LocalAddr().String()
	waitFor(t, 10*time.Second, "the follower's audit line", func() (bool, string) {
		return hasLogLine(logs[follower].String(), "audit", "event=force_release", "key=audit/held", "remote="+clientAddr), logs[follower].String()
	})
	if hasLogLine(logs[follower].String(), "event=force_release", "via=peer") {
		t.Fatalf("the follower audited a peer arrival:\n%s", logs[follower].String())
	}
	waitFor(t, 10*time.Second, "the leader's peer audit line", func() (bool, string) {
		return hasLogLine(logs[leader].String(), "audit", "event=force_release", "via=peer", "key=audit/held"), logs[leader].String()
	})

	// A forced release straight to the leader's open peer port.
	if _, err := gc.TryLock(ctx, "audit/raw", client.WithTTL(10*time.Minute)); err != nil {
		t.Fatal(err)
	}
	plain, err := transport.New(transport.Config{BindAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	force := &fsm.Command{Op: fsm.OpRelease, Key: "audit/raw", Force: true}
	if resp, err := plain.Call(ctx, nodes[leader][4], append([]byte{1}, force.AppendBinary(nil)...)); err != nil || len(resp) == 0 || resp[0] != 0 {
		t.Fatalf("forced release over the open peer port: %x %v", resp, err)
	}
	waitFor(t, 10*time.Second, "the raw forced release audited", func() (bool, string) {
		return hasLogLine(logs[leader].String(), "audit", "event=force_release", "via=peer", "key=audit/raw", "remote=127.0.0.1:"), logs[leader].String()
	})
	if info, err := gc.Inspect(ctx, "audit/raw", api.ReadOptions{}); !errors.Is(err, api.ErrNotFound) {
		t.Fatalf("audit/raw after the forced release: %+v %v", info, err)
	}
}
