package compat

import (
	"bufio"
	"io"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// child is an outside client program (python, node) run by a test. It
// talks in lines: the test reads its stdout line by line and may write
// lines to its stdin. stderr goes to the test log.
type child struct {
	t     testing.TB
	name  string
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string // stdout, closed at EOF
	read  chan struct{}

	waitOnce sync.Once
	waitErr  error
}

// startChild starts prog with args in dir (empty: the current one); the
// cleanup kills it if the test did not wait for it.
func startChild(t testing.TB, name, dir string, env []string, prog string, args ...string) *child {
	t.Helper()
	cmd := exec.Command(prog, args...)
	cmd.Dir = dir
	if env != nil {
		cmd.Env = env
	}
	c := &child{t: t, name: name, cmd: cmd, lines: make(chan string, 256), read: make(chan struct{})}
	var err error
	if c.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = &lineWriter{t: t, prefix: name + " stderr: "}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	// Ends at EOF on the child's stdout (it exited or closed it).
	go func() {
		defer close(c.read)
		defer close(c.lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		for range c.lines { // unblock the reader; ends at EOF
		}
		_ = c.wait()
	})
	return c
}

// expect reads stdout lines until one equals want; other lines are
// logged. It fails the test on EOF or after timeout.
func (c *child) expect(want string, timeout time.Duration) {
	c.t.Helper()
	if line, ok := c.expectLine(func(l string) bool { return l == want }, timeout); !ok {
		c.t.Fatalf("%s: waiting for %q: %s", c.name, want, line)
	}
}

// expectLine reads lines until match accepts one (returned with true).
// On EOF or timeout it returns a description and false.
func (c *child) expectLine(match func(string) bool, timeout time.Duration) (string, bool) {
	c.t.Helper()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		select {
		case line, ok := <-c.lines:
			if !ok {
				return "exited (" + errString(c.wait()) + ")", false
			}
			c.t.Logf("%s: %s", c.name, line)
			if match(line) {
				return line, true
			}
		case <-timer.C:
			return "timed out after " + timeout.String(), false
		}
	}
}

// send writes one line to the child's stdin.
func (c *child) send(line string) {
	c.t.Helper()
	if _, err := io.WriteString(c.stdin, line+"\n"); err != nil {
		c.t.Fatalf("%s: write stdin: %v", c.name, err)
	}
}

// finish logs the remaining output and waits for the exit, failing the
// test on a non-zero status or after timeout.
func (c *child) finish(timeout time.Duration) {
	c.t.Helper()
	if line, ok := c.expectLine(func(string) bool { return false }, timeout); ok || !strings.HasPrefix(line, "exited") {
		c.t.Fatalf("%s: %s", c.name, line)
	}
	if err := c.wait(); err != nil {
		c.t.Fatalf("%s: %v", c.name, err)
	}
}

// wait reaps the child once its stdout is drained.
func (c *child) wait() error {
	c.waitOnce.Do(func() {
		c.stdin.Close()
		<-c.read
		c.waitErr = c.cmd.Wait()
	})
	return c.waitErr
}

func errString(err error) string {
	if err == nil {
		return "status 0"
	}
	return err.Error()
}
