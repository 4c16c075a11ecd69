package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/locknode/locknode/api"
)

var nodeLine = regexp.MustCompile(`^node (n\d) http=(\S+) resp=(\S+) raft=(\S+)$`)

// startDev runs `locknode dev` in-process and returns the node lines once
// it printed ready; stop ends it and returns its exit code.
func startDev(t *testing.T, args ...string) (lines [][]string, stop func() int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	code := make(chan int, 1)
	go func() { // ends when ctx is cancelled (runDev returns)
		c := runDev(ctx, args, pw, io.Discard)
		pw.Close()
		code <- c
	}()
	sc := bufio.NewScanner(pr)
	deadline := time.AfterFunc(30*time.Second, cancel)
	defer deadline.Stop()
	for sc.Scan() {
		line := sc.Text()
		if line == "ready" {
			break
		}
		m := nodeLine.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("unexpected line %q", line)
		}
		lines = append(lines, m)
	}
	go io.Copy(io.Discard, pr) // ends when runDev closes pw
	return lines, func() int { cancel(); return <-code }
}

func TestDevCluster(t *testing.T) {
	// A --data directory that does not exist yet is created.
	dir := filepath.Join(t.TempDir(), "new", "dev")
	lines, stop := startDev(t, "--nodes", "3", "--data", dir)
	if len(lines) != 3 {
		t.Fatalf("%d node lines", len(lines))
	}
	var fence uint64
	for i, m := range lines {
		resp, err := http.Get("http://" + m[2] + "/v1/status")
		if err != nil {
			t.Fatal(err)
		}
		var st api.Status
		err = json.NewDecoder(resp.Body).Decode(&st)
		resp.Body.Close()
		if err != nil || st.ID != m[1] || len(st.Members) != 3 {
			t.Fatalf("status of %s: %+v %v", m[1], st, err)
		}
		if i == 1 {
			body := `{"key":"k","owner":"o","ttl_ms":600000}`
			resp, err := http.Post("http://"+m[2]+"/v1/locks/try", "application/json", strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			var l api.Lease
			json.NewDecoder(resp.Body).Decode(&l)
			resp.Body.Close()
			if resp.StatusCode != 200 || l.Fence == 0 {
				t.Fatalf("acquire via %s: %d %+v", m[1], resp.StatusCode, l)
			}
			fence = l.Fence
		}
		c, err := net.Dial("tcp", m[3])
		if err != nil {
			t.Fatal(err)
		}
		c.Write([]byte("PING\r\n"))
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		line, _ := bufio.NewReader(c).ReadString('\n')
		c.Close()
		if line != "+PONG\r\n" {
			t.Fatalf("RESP PING on %s: %q", m[3], line)
		}
		if resp, err := http.Get("http://" + m[2] + "/metrics"); err != nil || resp.StatusCode != 200 {
			t.Fatalf("metrics: %v", err)
		} else {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			v, commit := buildVersion()
			want := fmt.Sprintf(`locknode_build_info{commit=%q,goversion=%q,version=%q} 1`, commit, runtime.Version(), v)
			if !strings.Contains(string(body), want) {
				t.Fatalf("metrics lack %s", want)
			}
		}
	}
	if code := stop(); code != 0 {
		t.Fatalf("exit code %d", code)
	}

	// Restart on the same data directory: same raft addresses, the lock
	// is still there.
	lines2, stop2 := startDev(t, "--nodes", "3", "--data", dir)
	defer stop2()
	for i := range lines {
		if lines[i][4] != lines2[i][4] {
			t.Fatalf("raft address changed: %s -> %s", lines[i][4], lines2[i][4])
		}
	}
	resp, err := http.Get("http://" + lines2[0][2] + "/v1/locks/k")
	if err != nil {
		t.Fatal(err)
	}
	var info api.LockInfo
	json.NewDecoder(resp.Body).Decode(&info)
	resp.Body.Close()
	if len(info.Holders) != 1 || info.Holders[0].Fence != fence {
		t.Fatalf("after restart: %+v", info)
	}
}

func TestParsePeers(t *testing.T) {
	cases := []struct {
		in   string
		want int
		bad  bool
	}{
		{"", 0, false},
		{"a=h:1", 1, false},
		{"a=h:1, b=h:2", 2, false},
		{"a", 0, true},
		{"=h:1", 0, true},
		{"a=", 0, true},
	}
	for _, c := range cases {
		p, err := parsePeers(c.in)
		if (err != nil) != c.bad || len(p) != c.want {
			t.Errorf("parsePeers(%q) = %v, %v", c.in, p, err)
		}
	}
}

func TestRunUnknownCommand(t *testing.T) {
	if code := run([]string{"nope"}, io.Discard, io.Discard); code != 2 {
		t.Fatalf("exit %d", code)
	}
	if code := run([]string{"serve", "--bogus"}, io.Discard, io.Discard); code != 2 {
		t.Fatalf("exit %d", code)
	}
	if code := run([]string{"serve"}, io.Discard, io.Discard); code != 2 {
		t.Fatalf("serve without id: exit %d", code)
	}
}

func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		var out strings.Builder
		if code := run(args, &out, io.Discard); code != 0 {
			t.Fatalf("%v: exit %d", args, code)
		}
		if got := out.String(); !strings.HasPrefix(got, "locknode ") || !strings.Contains(got, "commit ") || !strings.Contains(got, runtime.Version()) {
			t.Fatalf("%v printed %q", args, got)
		}
	}
	if code := run([]string{"version", "extra"}, io.Discard, io.Discard); code != 2 {
		t.Fatalf("version with an argument: exit %d", code)
	}
}
