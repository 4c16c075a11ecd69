package main

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/locknode/locknode/api"
)

// serveCommon are the flags of an in-process serve on ephemeral ports.
var serveCommon = []string{"--log-level", "off", "--http-addr", "127.0.0.1:0", "--resp-addr", "127.0.0.1:0", "--raft-addr", "127.0.0.1:0"}

// threeServes starts a 3-node cluster of in-process serves, joined one
// by one; it returns their node lines (http [2], resp [3], raft [4]).
func threeServes(t *testing.T) [][]string {
	t.Helper()
	n1 := startServe(t, append([]string{"--id", "n1", "--data", t.TempDir(), "--bootstrap"}, serveCommon...)...)
	n2 := startServe(t, append([]string{"--id", "n2", "--data", t.TempDir(), "--join", n1[4]}, serveCommon...)...)
	n3 := startServe(t, append([]string{"--id", "n3", "--data", t.TempDir(), "--join", n1[4]}, serveCommon...)...)
	return [][]string{n1, n2, n3}
}

// --join given another service's port (HTTP, RESP) fails at once with a
// message that says what it is, instead of retrying for --join-timeout.
func TestServeJoinThroughClientPortFailsAtOnce(t *testing.T) {
	n1 := startServe(t, append([]string{"--id", "n1", "--data", t.TempDir(), "--bootstrap"}, serveCommon...)...)
	for _, tc := range []struct{ name, addr, want string }{
		{"http", n1[2], "that is an HTTP port; --join takes a member's raft address"},
		{"resp", n1[3], "that is a Redis (RESP) port; --join takes a member's raft address"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb syncBuffer
			start := time.Now()
			code := runServe(context.Background(), append([]string{"--id", "n2", "--data", t.TempDir(), "--join", tc.addr, "--join-timeout", "2m"}, serveCommon...), &out, &errb)
			if took := time.Since(start); took > 20*time.Second {
				t.Errorf("took %v", took)
			}
			if code != 1 || !strings.Contains(errb.String(), tc.want) {
				t.Fatalf("exit %d, stderr:\n%s", code, errb.String())
			}
		})
	}
}

// `members remove` of an id that is no member fails (exit 1) and
// changes nothing.
func TestMembersRemoveUnknown(t *testing.T) {
	n1 := startServe(t, append([]string{"--id", "n1", "--data", t.TempDir(), "--bootstrap"}, serveCommon...)...)
	code, out, errb := execLine("members", "remove", "nosuch", "--endpoints", n1[2])
	if code != exitLockFailed || strings.Contains(out, "removed") || !strings.Contains(errb, "no such member") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errb)
	}
	req, err := http.NewRequest(http.MethodDelete, "http://"+n1[2]+"/v1/members/nosuch", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("DELETE /v1/members/nosuch: %d, want 404", resp.StatusCode)
	}
	if st := getStatus(t, n1[2]); len(st.Members) != 1 {
		t.Fatalf("members: %+v", st.Members)
	}
}

// `join` refuses a raft address that does not answer, unless --force;
// then the leader's status marks the new voter unreachable, `status
// --cluster` exits 1 and plain `status` keeps exit 0 (a leader is known).
func TestJoinUnreachableAndStatus(t *testing.T) {
	nodes := threeServes(t)
	var eps []string
	for _, n := range nodes {
		eps = append(eps, n[2])
	}
	all := strings.Join(eps, ",")
	waitFor(t, 20*time.Second, "3 members with a leader", func() (bool, string) {
		st := getStatus(t, nodes[0][2])
		return len(st.Members) == 3 && st.Leader != "", st.Leader
	})
	code, out, errb := execLine("join", "--id", "n5", "--raft-addr", "127.0.0.1:1", "--endpoints", all)
	if code != exitLockFailed || !strings.Contains(errb, "does not answer") {
		t.Fatalf("join unreachable: exit %d, stdout %q, stderr %q", code, out, errb)
	}
	if st := getStatus(t, nodes[0][2]); len(st.Members) != 3 {
		t.Fatalf("refused join changed members: %+v", st.Members)
	}
	if code, out, errb := execLine("join", "--force", "--id", "n5", "--raft-addr", "127.0.0.1:1", "--endpoints", all); code != 0 {
		t.Fatalf("join --force: exit %d, stdout %q, stderr %q", code, out, errb)
	}
	waitFor(t, 20*time.Second, "the leader to mark n5 unreachable", func() (bool, string) {
		code, out, errb := execLine("status", "--cluster", "--endpoints", all)
		return code == exitLockFailed && strings.Contains(errb, "voter n5 (127.0.0.1:1) does not answer the leader"), out + errb
	})
	// Plain status, at the leader: the mark is shown, the exit code is
	// still "a leader is known".
	var leaderHTTP string
	for _, n := range nodes {
		if st := getStatus(t, n[2]); st.ID == st.Leader {
			leaderHTTP = n[2]
		}
	}
	if leaderHTTP == "" {
		t.Skip("leadership moved; status --cluster was checked")
	}
	code, out, errb = execLine("status", "--endpoints", leaderHTTP)
	if code != 0 || !strings.Contains(out, "UNREACHABLE") || !strings.Contains(errb, "voter n5") {
		t.Fatalf("status: exit %d, stdout %q, stderr %q", code, out, errb)
	}
	resp, err := http.Get("http://" + leaderHTTP + "/v1/status")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st struct {
		Members []struct {
			ID            string `json:"id"`
			LastContactMs *int64 `json:"last_contact_ms"`
			Unreachable   bool   `json:"unreachable"`
		} `json:"members"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	for _, m := range st.Members {
		switch {
		case m.ID == "n5" && !m.Unreachable:
			t.Errorf("/v1/status: n5 not unreachable: %+v", m)
		case m.ID != "n5" && m.Unreachable:
			t.Errorf("/v1/status: %s unreachable", m.ID)
		}
	}
}

// A node that has not joined yet serves its client ports and refuses
// requests at once: RESP -TRYAGAIN, HTTP 503.
func TestServeNotJoinedAnswersAtOnce(t *testing.T) {
	httpAddr, respAddr := freeAddr(t), freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	// Ends when ctx is cancelled: the join (to a closed port) gives up.
	go func() {
		done <- runServe(ctx, []string{"--id", "n9", "--data", t.TempDir(), "--log-level", "off", "--join", "127.0.0.1:1", "--join-timeout", "5m",
			"--http-addr", httpAddr, "--resp-addr", respAddr, "--raft-addr", "127.0.0.1:0"}, new(syncBuffer), new(syncBuffer))
	}()
	t.Cleanup(func() { cancel(); <-done })
	const bound = 2 * time.Second // far under the 3 s and 30 s of a member without a leader
	var reply string
	waitFor(t, 20*time.Second, "RESP to answer", func() (bool, string) {
		c, err := net.DialTimeout("tcp", respAddr, time.Second)
		if err != nil {
			return false, err.Error()
		}
		defer c.Close()
		start := time.Now()
		c.SetDeadline(time.Now().Add(time.Minute))
		if _, err := c.Write([]byte("GET k\r\n")); err != nil {
			return false, err.Error()
		}
		reply, err = bufio.NewReader(c).ReadString('\n')
		if err != nil {
			return false, err.Error()
		}
		if took := time.Since(start); took > bound {
			t.Fatalf("RESP GET answered after %v: %q", took, reply)
		}
		return true, ""
	})
	if !strings.HasPrefix(reply, "-TRYAGAIN") {
		t.Fatalf("RESP GET: %q", reply)
	}
	hc := &http.Client{Timeout: time.Minute}
	start := time.Now()
	resp, err := hc.Get("http://" + httpAddr + "/v1/locks/k")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body api.ErrorBody
	_ = json.NewDecoder(resp.Body).Decode(&body)
	if took := time.Since(start); resp.StatusCode != http.StatusServiceUnavailable || took > bound {
		t.Fatalf("HTTP GET: %d %+v after %v", resp.StatusCode, body, took)
	}
	t.Logf("RESP %q; HTTP 503 %+v", strings.TrimSpace(reply), body)
}
