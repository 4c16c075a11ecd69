package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
)

func TestCheckPprofAddr(t *testing.T) {
	for _, ok := range []string{"127.0.0.1:0", ":6060", "localhost:6060", "[::1]:6060"} {
		if err := checkPprofAddr(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"6060", "127.0.0.1", "127.0.0.1:x", "127.0.0.1:70000", "a:b:c"} {
		if err := checkPprofAddr(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestPprofServer(t *testing.T) {
	p, err := startPprof("127.0.0.1:0", hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + p.Addr() + "/debug/pprof/heap?debug=1")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !bytes.Contains(body, []byte("heap profile")) {
		t.Fatalf("heap profile: %d %.200q", resp.StatusCode, body)
	}
	// Only pprof is served there.
	resp, err = http.Get("http://" + p.Addr() + "/v1/status")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("/v1/status on the pprof port: %d", resp.StatusCode)
	}
	p.Close()
	if _, err := http.Get("http://" + p.Addr() + "/debug/pprof/"); err == nil {
		t.Fatal("pprof still served after Close")
	}
}

// Bad --pprof and --memory-limit values stop serve and dev with exit
// code 2 and a message before anything starts (no data directory is
// created, the process's memory limit is unchanged).
func TestRuntimeFlagsRejected(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	procsBefore := runtime.GOMAXPROCS(0)
	cases := []struct {
		cmd  string
		args []string
		want string
	}{
		{"serve", []string{"--pprof", "6060"}, "--pprof"},
		{"serve", []string{"--pprof", "localhost:http-alt"}, "--pprof"},
		{"serve", []string{"--memory-limit", "lots"}, "--memory-limit"},
		{"serve", []string{"--memory-limit", "300"}, "below the minimum"},
		{"serve", []string{"--memory-limit", "150%"}, "percentage"},
		{"serve", []string{"--gomaxprocs", "two"}, "--gomaxprocs"},
		{"serve", []string{"--gomaxprocs", "-1"}, "--gomaxprocs"},
		{"dev", []string{"--pprof", "nope"}, "--pprof"},
		{"dev", []string{"--memory-limit", "1.5G"}, "--memory-limit"},
	}
	for _, c := range cases {
		t.Run(c.cmd+" "+strings.Join(c.args, " "), func(t *testing.T) {
			data := filepath.Join(t.TempDir(), "data")
			args := append([]string{"--data", data}, c.args...)
			if c.cmd == "serve" {
				args = append(args, "--id", "n1", "--raft-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0", "--resp-addr", "127.0.0.1:0", "--bootstrap")
			}
			var stderr bytes.Buffer
			code := commands[c.cmd].run(context.Background(), args, io.Discard, &stderr)
			if code != 2 || !strings.Contains(stderr.String(), c.want) {
				t.Fatalf("exit %d, stderr %q; want 2 and %q", code, stderr.String(), c.want)
			}
			if _, err := os.Stat(data); !os.IsNotExist(err) {
				t.Fatalf("data directory created: %v", err)
			}
			if got := debug.SetMemoryLimit(-1); got != before {
				t.Fatalf("memory limit changed to %d", got)
			}
			if got := runtime.GOMAXPROCS(0); got != procsBefore {
				t.Fatalf("GOMAXPROCS changed to %d", got)
			}
		})
	}
}

// serve applies --memory-limit and --gomaxprocs and serves pprof on
// --pprof.
func TestServeRuntimeFlags(t *testing.T) {
	if os.Getenv("GOMEMLIMIT") != "" {
		t.Skip("GOMEMLIMIT is set; it wins over --memory-limit")
	}
	if os.Getenv("GOMAXPROCS") != "" {
		t.Skip("GOMAXPROCS is set; it wins over --gomaxprocs")
	}
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })
	procsBefore := runtime.GOMAXPROCS(0)
	t.Cleanup(func() { runtime.GOMAXPROCS(procsBefore) })
	wantProcs := procsBefore + 1 // differs from whatever the process had

	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	var logs syncBuffer
	code := make(chan int, 1)
	go func() { // ends when ctx is cancelled (runServe returns)
		c := runServe(ctx, []string{"--id", "n1", "--data", t.TempDir(), "--bootstrap",
			"--raft-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0", "--resp-addr", "127.0.0.1:0",
			"--pprof", "127.0.0.1:0", "--memory-limit", "3GiB", "--gomaxprocs", strconv.Itoa(wantProcs)}, pw, &logs)
		pw.Close()
		code <- c
	}()
	defer func() {
		cancel()
		if c := <-code; c != 0 {
			t.Errorf("serve exited %d; log:\n%s", c, logs.String())
		}
	}()
	line, err := readLine(pr)
	if err != nil || !strings.HasPrefix(line, "node n1 ") {
		t.Fatalf("first line %q, %v; log:\n%s", line, err, logs.String())
	}
	go io.Copy(io.Discard, pr) // ends when runServe closes pw

	if got := debug.SetMemoryLimit(-1); got != 3<<30 {
		t.Fatalf("memory limit %d, want %d", got, int64(3<<30))
	}
	if got := runtime.GOMAXPROCS(0); got != wantProcs {
		t.Fatalf("GOMAXPROCS %d, want %d", got, wantProcs)
	}
	addr := ""
	for _, l := range strings.Split(logs.String(), "\n") {
		if _, rest, ok := strings.Cut(l, "pprof listening: addr="); ok {
			addr = strings.TrimSpace(rest)
		}
	}
	if addr == "" {
		t.Fatalf("no pprof address logged:\n%s", logs.String())
	}
	resp, err := http.Get("http://" + addr + "/debug/pprof/goroutine?debug=1")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !bytes.Contains(body, []byte("goroutine profile")) {
		t.Fatalf("goroutine profile: %d %.200q", resp.StatusCode, body)
	}
}

// readLine reads one line from r byte by byte, so nothing after it is
// consumed.
func readLine(r io.Reader) (string, error) {
	var b []byte
	var c [1]byte
	for {
		if _, err := io.ReadFull(r, c[:]); err != nil {
			return string(b), err
		}
		if c[0] == '\n' {
			return string(b), nil
		}
		b = append(b, c[0])
	}
}
