package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Stopping `locknode dev` while requests block in it (an HTTP acquire
// and a RESP LOCK.ACQUIRE waiting in the queue) is quick and quiet: the
// waits end with an answer while every node still runs, instead of the
// HTTP server's grace period running out while the nodes go one by one
// (which took 5 s and logged raft warnings).
func TestDevStopsQuicklyWithWaiters(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	var errb syncBuffer
	code := make(chan int, 1)
	go func() { // ends when ctx is cancelled (runDev returns)
		c := runDev(ctx, []string{"--nodes", "3"}, pw, &errb)
		pw.Close()
		code <- c
	}()
	var lines [][]string
	sc := bufio.NewScanner(pr)
	for sc.Scan() && sc.Text() != "ready" {
		if m := nodeLine.FindStringSubmatch(sc.Text()); m != nil {
			lines = append(lines, m)
		}
	}
	go io.Copy(io.Discard, pr) // ends when runDev closes pw
	if len(lines) != 3 {
		t.Fatalf("dev did not start:\n%s", errb.String())
	}
	httpAddr, respAddr := lines[1][2], lines[2][3]
	post := func(body string) (int, string) {
		resp, err := http.Post("http://"+httpAddr+"/v1/locks/acquire", "application/json", strings.NewReader(body))
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if c, b := post(`{"key":"k","owner":"o1","ttl_ms":600000}`); c != 200 {
		t.Fatalf("acquire: %d %s", c, b)
	}
	type answer struct {
		code int
		body string
	}
	httpAns := make(chan answer, 1)
	go func() { // ends when the acquire is answered (at the latest when dev stops)
		c, b := post(`{"key":"k","owner":"o2","ttl_ms":600000,"wait_ms":600000}`)
		httpAns <- answer{c, b}
	}()
	conn, err := net.Dial("tcp", respAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "LOCK.ACQUIRE k o3 600000 WAIT 600000\r\n")
	// Both waiters are queued before dev stops.
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get("http://" + httpAddr + "/v1/locks/k")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if strings.Contains(string(b), `"o2"`) && strings.Contains(string(b), `"o3"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiters not queued: %s", b)
		}
		time.Sleep(20 * time.Millisecond)
	}

	start := time.Now()
	cancel()
	select {
	case c := <-code:
		if c != 0 {
			t.Fatalf("exit %d\n%s", c, errb.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("dev did not stop:\n%s", errb.String())
	}
	// The HTTP server's grace period is 5 s: stopping within 4 s shows
	// the waits did not run it out.
	if took := time.Since(start); took > 4*time.Second {
		t.Errorf("dev took %v to stop", took)
	}
	select {
	case a := <-httpAns:
		if a.code != http.StatusRequestTimeout || !strings.Contains(a.body, `"cancelled"`) {
			t.Errorf("blocked HTTP acquire answered %d %s", a.code, a.body)
		}
	case <-time.After(10 * time.Second):
		t.Error("blocked HTTP acquire not answered")
	}
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	if line, _ := bufio.NewReader(conn).ReadString('\n'); !strings.HasPrefix(line, "-TRYAGAIN") {
		t.Errorf("blocked LOCK.ACQUIRE answered %q", line)
	}
	out := errb.String()
	for _, bad := range []string{"[ERROR]", "[WARN]"} {
		if strings.Contains(out, bad) {
			t.Errorf("stderr has %s lines:\n%s", bad, out)
		}
	}
}
