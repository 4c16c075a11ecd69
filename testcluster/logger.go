package testcluster

import (
	"bytes"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/go-hclog"
)

// testLog writes hclog lines through t.Log until stop, then drops them:
// t.Log panics once the test has ended, and raft goroutines can outlive
// the moment a test function returns.
type testLog struct {
	mu      sync.Mutex
	t       testing.TB
	stopped bool
}

func (w *testLog) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.stopped {
		w.t.Log(string(bytes.TrimRight(p, "\n")))
	}
	return len(p), nil
}

func (w *testLog) stop() {
	w.mu.Lock()
	w.stopped = true
	w.mu.Unlock()
}

// logLevel is Options.LogLevel, else LOCKNODE_TEST_LOG (trace, debug,
// info, warn, error, off), else warn.
func logLevel(opt string) hclog.Level {
	s := opt
	if s == "" {
		s = os.Getenv("LOCKNODE_TEST_LOG")
	}
	if s == "" {
		return hclog.Warn
	}
	lv := hclog.LevelFromString(strings.ToLower(s))
	if lv == hclog.NoLevel {
		return hclog.Warn
	}
	return lv
}

func newTestLogger(w *testLog, level hclog.Level) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Name: "testcluster", Level: level, Output: w})
}
