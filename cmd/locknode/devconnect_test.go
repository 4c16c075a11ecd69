//go:build unix

package main

import (
	"bufio"
	"context"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/locknode/locknode/auth"
)

// startDevHint runs `locknode dev` in-process like startDev and also
// returns the connection hint it prints after ready (up to its
// `locknode status` line).
func startDevHint(t *testing.T, args ...string) (hint []string, stop func() int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	code := make(chan int, 1)
	go func() { // ends when ctx is cancelled (runDev returns)
		c := runDev(ctx, args, pw, io.Discard)
		pw.Close()
		code <- c
	}()
	stop = func() int { cancel(); return <-code }
	sc := bufio.NewScanner(pr)
	deadline := time.AfterFunc(60*time.Second, cancel)
	defer deadline.Stop()
	ready := false
	for sc.Scan() {
		line := sc.Text()
		if line == "ready" {
			ready = true
			continue
		}
		if ready {
			hint = append(hint, line)
			if strings.HasPrefix(line, "  locknode status") {
				break
			}
		}
	}
	go io.Copy(io.Discard, pr) // ends when runDev closes pw
	if !ready {
		t.Fatalf("dev ended before ready (exit %d)", stop())
	}
	return hint, stop
}

// `dev --tls --users` prints commands that work as printed once
// LOCKNODE_USER and LOCKNODE_PASSWORD name a user of the file: curl and
// redis-cli (run through sh, as a user pastes them) and locknode status.
func TestDevConnectHintWithUsers(t *testing.T) {
	dir := t.TempDir()
	usersPath := filepath.Join(dir, "users.acl")
	if err := os.WriteFile(usersPath, []byte("user admin on >s3cret ~* &* +@all\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	hint, stop := startDevHint(t, "--nodes", "1", "--data", filepath.Join(dir, "dev"), "--tls", "--users", usersPath)
	defer stop()
	text := strings.Join(hint, "\n")
	if !strings.Contains(text, usersPath) || !strings.Contains(text, "users: admin") {
		t.Fatalf("hint does not name the users file and its users:\n%s", text)
	}
	env := append(os.Environ(), "LOCKNODE_USER=admin", "LOCKNODE_PASSWORD=s3cret")
	var curlLine, redisLine, statusLine string
	for _, l := range hint {
		switch l = strings.TrimSpace(l); {
		case strings.HasPrefix(l, "curl "):
			curlLine = l
		case strings.Contains(l, "redis-cli "):
			redisLine = l
		case strings.HasPrefix(l, "locknode status "):
			statusLine = l
		}
	}
	if curlLine == "" || redisLine == "" || statusLine == "" {
		t.Fatalf("hint lacks a command:\n%s", text)
	}
	sh := func(line string) string {
		cmd := exec.Command(program(t, "sh"), "-c", line)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", line, err, out)
		}
		return string(out)
	}
	program(t, "curl")
	if out := sh(curlLine + " -sS --fail-with-body"); !strings.Contains(out, `"leader"`) {
		t.Errorf("%s printed %q", curlLine, out)
	}
	program(t, "redis-cli")
	if out := sh(redisLine); strings.TrimSpace(out) != "PONG" {
		t.Errorf("%s printed %q", redisLine, out)
	}
	// Without credentials the same curl is refused: the hint's
	// credentials are what makes it work.
	noAuth := strings.Replace(curlLine, ` -u "$LOCKNODE_USER:$LOCKNODE_PASSWORD"`, "", 1)
	if noAuth == curlLine {
		t.Fatalf("curl line carries no credentials: %s", curlLine)
	}
	if out, err := exec.Command("sh", "-c", noAuth+" -sS -o /dev/null -w %{http_code}").CombinedOutput(); err != nil || string(out) != "401" {
		t.Errorf("without credentials: %q %v", out, err)
	}
	t.Setenv("LOCKNODE_USER", "admin")
	t.Setenv("LOCKNODE_PASSWORD", "s3cret")
	args := strings.Fields(strings.TrimPrefix(statusLine, "locknode status "))
	var out, errb strings.Builder
	if c := runStatus(context.Background(), args, &out, &errb); c != 0 {
		t.Fatalf("%s: exit %d\n%s%s", statusLine, c, out.String(), errb.String())
	}
}

// `dev --users` without --tls: plain http:// and RESP, with credentials.
func TestPrintDevConnectUsersPlain(t *testing.T) {
	path := filepath.Join(t.TempDir(), "users.acl")
	if err := os.WriteFile(path, []byte("user app on >pw ~app:* +@read +@write\nuser ops on >pw2 ~* +@all\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	users, err := auth.NewStore(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := listenAddrs{listenLoopback(t), listenLoopback(t)}
	var out strings.Builder
	printDevConnect(&out, nil, false, path, users, p)
	_, rport, _ := net.SplitHostPort(p.RESPAddr())
	for _, want := range []string{
		"users: every request authenticates against " + path + " (users: app, ops)",
		`curl -u "$LOCKNODE_USER:$LOCKNODE_PASSWORD" http://` + p.HTTPAddr() + "/v1/status",
		`REDISCLI_AUTH="$LOCKNODE_PASSWORD" redis-cli --user "$LOCKNODE_USER" -h 127.0.0.1 -p ` + rport + " PING",
		"locknode status --endpoints http://" + p.HTTPAddr(),
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("missing %q in:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "tls") {
		t.Errorf("TLS named without --tls:\n%s", out.String())
	}
}

func listenLoopback(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

// listenAddrs are the addresses of two listeners, as a node's HTTP and
// RESP addresses.
type listenAddrs struct{ http, resp net.Listener }

func (a listenAddrs) HTTPAddr() string { return a.http.Addr().String() }
func (a listenAddrs) RESPAddr() string { return a.resp.Addr().String() }
