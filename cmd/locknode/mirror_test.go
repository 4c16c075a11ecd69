package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locknode/locknode/api"
)

// startRedis runs a throw-away redis-server on a unix socket in a temp
// dir (no port to race for) and returns the socket path. Skips without
// redis-server unless LOCKNODE_CI=1.
func startRedis(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		if os.Getenv("LOCKNODE_CI") == "1" {
			t.Fatalf("redis-server not found (LOCKNODE_CI=1): %v", err)
		}
		t.Skip("redis-server not installed")
	}
	dir, err := os.MkdirTemp("", "lnr") // short: unix socket paths are limited to ~100 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "redis.sock")
	cmd := exec.Command("redis-server", "--port", "0", "--unixsocket", sock, "--save", "",
		"--appendonly", "no", "--loglevel", "warning")
	if err := cmd.Start(); err != nil {
		t.Fatalf("start redis-server: %v", err)
	}
	done := make(chan struct{})
	// Ends when redis-server exits (the cleanup kills it).
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-done })
	c := redisUnix(t, sock)
	waitFor(t, 10*time.Second, "redis-server to answer PING", func() (bool, string) {
		err := c.Ping(context.Background()).Err()
		return err == nil, fmt.Sprint(err)
	})
	return sock
}

func redisUnix(t *testing.T, sock string) *redis.Client {
	c := redis.NewClient(&redis.Options{Network: "unix", Addr: sock, MaxRetries: -1})
	t.Cleanup(func() { c.Close() })
	return c
}

// respClient talks to a node's RESP bridge (RESP2, so SENTINEL replies are
// flat arrays).
func respClient(t *testing.T, addr string) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, MaxRetries: -1})
	t.Cleanup(func() { c.Close() })
	return c
}

// waitFor polls cond every 10ms until it holds, failing the test with
// cond's last explanation after timeout.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, why := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s: %s", timeout, what, why)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func getStatus(t *testing.T, httpAddr string) api.Status {
	t.Helper()
	resp, err := http.Get("http://" + httpAddr + "/v1/status")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st api.Status
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	return st
}

func postJSON(t *testing.T, httpAddr, path, body string) int {
	t.Helper()
	resp, err := http.Post("http://"+httpAddr+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// `locknode dev --mirror`: a lock taken over HTTP shows in the mirror
// Redis; every node reports its mirror in /v1/status, RESP INFO and
// /metrics; exactly one (the leader's) writes.
func TestDevMirror(t *testing.T) {
	sock := startRedis(t)
	rdb := redisUnix(t, sock)
	lines, stop := startDev(t, "--nodes", "3", "--mirror", "unix://"+sock)
	defer stop()
	ctx := context.Background()

	if code := postJSON(t, lines[1][2], "/v1/locks/try", `{"key":"jobs/a","owner":"tok-1","ttl_ms":600000}`); code != 200 {
		t.Fatalf("acquire: %d", code)
	}
	waitFor(t, 15*time.Second, "the lock in the mirror Redis", func() (bool, string) {
		v, err := rdb.Get(ctx, "jobs/a").Result()
		return v == "tok-1", fmt.Sprint(v, err)
	})
	if pttl, err := rdb.PTTL(ctx, "jobs/a").Result(); err != nil || pttl <= 0 || pttl > 600*time.Second {
		t.Fatalf("mirrored PTTL %v %v", pttl, err)
	}

	waitFor(t, 10*time.Second, "one writing mirror, all running", func() (bool, string) {
		writers := 0
		var why []string
		for _, m := range lines {
			st := getStatus(t, m[2])
			if st.Mirror == nil || st.Mirror["running"] != true {
				return false, fmt.Sprintf("%s: mirror %v", m[1], st.Mirror)
			}
			if st.Mirror["writing"] == true {
				writers++
				if st.Leader != st.ID {
					return false, m[1] + " writes but does not lead"
				}
			}
			why = append(why, fmt.Sprintf("%s writing=%v", m[1], st.Mirror["writing"]))
		}
		return writers == 1, strings.Join(why, ", ")
	})

	for _, m := range lines {
		info, err := respClient(t, m[3]).Info(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(info, "# Mirror\r\nmirror_running:1\r\n") || !strings.Contains(info, "# Locknode\r\n") {
			t.Fatalf("INFO on %s lacks the mirror section:\n%s", m[1], info)
		}
		resp, err := http.Get("http://" + m[2] + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(b), "locknode_mirror_index ") {
			t.Fatalf("/metrics on %s lacks locknode_mirror_index", m[1])
		}
	}

	// Release through another node: the key leaves Redis.
	if code := postJSON(t, lines[2][2], "/v1/locks/release", `{"key":"jobs/a","owner":"tok-1"}`); code != 200 {
		t.Fatalf("release: %d", code)
	}
	waitFor(t, 15*time.Second, "the lock gone from the mirror Redis", func() (bool, string) {
		n, err := rdb.Exists(ctx, "jobs/a").Result()
		return err == nil && n == 0, fmt.Sprint(n, err)
	})
}

// sentinelNames returns the sorted "name" fields of SENTINEL SENTINELS.
func sentinelNames(ctx context.Context, c *redis.Client) ([]string, error) {
	v, err := c.Do(ctx, "SENTINEL", "SENTINELS", "locknode").Slice()
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range v {
		fields, _ := e.([]any)
		for i := 0; i+1 < len(fields); i += 2 {
			if fields[i] == "name" {
				names = append(names, fmt.Sprint(fields[i+1]))
			}
		}
	}
	sort.Strings(names)
	return names, nil
}

// Every node's SENTINEL SENTINELS lists the other members' RESP
// addresses (learnt through cluster.Node.PeerAddrs), and INFO counts
// them.
func TestDevSentinelPeers(t *testing.T) {
	lines, stop := startDev(t, "--nodes", "3")
	defer stop()
	ctx := context.Background()
	for _, m := range lines {
		var want []string
		for _, o := range lines {
			if o[1] != m[1] {
				want = append(want, o[3])
			}
		}
		c := respClient(t, m[3])
		got, err := sentinelNames(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		sort.Strings(want)
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("SENTINEL SENTINELS on %s = %v, want %v", m[1], got, want)
		}
		info, err := c.Info(ctx, "locknode").Result()
		if err != nil || !strings.Contains(info, "cluster_members:3\r\n") {
			t.Errorf("INFO locknode on %s: %q %v", m[1], info, err)
		}
	}
}

func TestBadMirrorFlag(t *testing.T) {
	for _, args := range [][]string{
		{"dev", "--mirror", "redis://h:1?batch_size=0"},
		{"serve", "--id", "a", "--data", t.TempDir(), "--mirror", "bogus://x"},
	} {
		if code := run(args, io.Discard, io.Discard); code != 2 {
			t.Errorf("%q: exit %d, want 2", args, code)
		}
	}
}

// startServe runs `locknode serve` in-process and returns its node line.
func startServe(t *testing.T, args ...string) []string {
	t.Helper()
	return startServeTo(t, io.Discard, args...)
}

// startServeTo is startServe with serve's stderr (its log) to stderr.
func startServeTo(t *testing.T, stderr io.Writer, args ...string) []string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	code := make(chan int, 1)
	go func() { // ends when ctx is cancelled (runServe returns)
		c := runServe(ctx, args, pw, stderr)
		pw.Close()
		code <- c
	}()
	t.Cleanup(func() {
		cancel()
		if c := <-code; c != 0 {
			t.Errorf("serve %q exited %d", args, c)
		}
	})
	line := make(chan string, 1)
	// Ends when runServe closes pw.
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			select {
			case line <- sc.Text():
			default:
			}
		}
	}()
	select {
	case l := <-line:
		m := nodeLine.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("unexpected line %q", l)
		}
		return m
	case c := <-code:
		code <- c
		t.Fatalf("serve %q exited %d before its node line", args, c)
	case <-time.After(30 * time.Second):
		t.Fatalf("serve %q: no node line", args)
	}
	return nil
}

// `locknode serve` nodes joined one by one learn each other's RESP
// addresses: SENTINEL SENTINELS on the first lists the two that joined.
func TestServeSentinelPeers(t *testing.T) {
	common := []string{"--log-level", "off", "--http-addr", "127.0.0.1:0", "--resp-addr", "127.0.0.1:0", "--raft-addr", "127.0.0.1:0"}
	n1 := startServe(t, append([]string{"--id", "n1", "--data", t.TempDir(), "--bootstrap"}, common...)...)
	n2 := startServe(t, append([]string{"--id", "n2", "--data", t.TempDir(), "--join", n1[4]}, common...)...)
	n3 := startServe(t, append([]string{"--id", "n3", "--data", t.TempDir(), "--join", n2[4]}, common...)...)
	want := []string{n2[3], n3[3]}
	sort.Strings(want)
	c := respClient(t, n1[3])
	waitFor(t, 15*time.Second, "n1 to list n2 and n3 as sentinels", func() (bool, string) {
		got, err := sentinelNames(context.Background(), c)
		if err != nil {
			return false, err.Error()
		}
		return strings.Join(got, " ") == strings.Join(want, " "), fmt.Sprint(got)
	})
}
