//go:build unix

package main

import (
	"bufio"
	"io"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// `locknode dev` started and stopped with Ctrl-C (SIGINT, through the
// same signal handling as the binary) says what it does and prints no
// warning or error: forming a cluster and stopping it are not faults.
func TestDevStartsAndStopsQuietly(t *testing.T) {
	pr, pw := io.Pipe()
	var errb syncBuffer
	code := make(chan int, 1)
	go func() { // ends when dev gets SIGINT (or fails to start)
		c := run([]string{"dev", "--nodes", "3"}, pw, &errb)
		pw.Close()
		code <- c
	}()
	ready := make(chan bool, 1)
	go func() { // ends when dev closes pw
		sc := bufio.NewScanner(pr)
		seen := false
		for sc.Scan() {
			if sc.Text() == "ready" && !seen {
				seen = true
				ready <- true
			}
		}
		if !seen {
			ready <- false
		}
	}()
	select {
	case ok := <-ready:
		if !ok {
			t.Fatalf("dev ended before ready: exit %d\n%s", <-code, errb.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("dev not ready after 60s:\n%s", errb.String())
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case c := <-code:
		if c != 0 {
			t.Fatalf("exit %d\n%s", c, errb.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("dev did not stop 30s after SIGINT:\n%s", errb.String())
	}
	out := errb.String()
	for _, w := range []string{"locknode dev: starting 3 nodes", "locknode dev: electing a leader", "locknode dev: stopping", "locknode dev: stopped"} {
		if !strings.Contains(out, w) {
			t.Errorf("stderr lacks %q", w)
		}
	}
	for _, bad := range []string{"[ERROR]", "[WARN]"} {
		if strings.Contains(out, bad) {
			t.Errorf("stderr has %s lines:\n%s", bad, out)
		}
	}
}
