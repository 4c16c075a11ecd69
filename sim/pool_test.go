package sim

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// scheduleResult is one schedule's outcome as TestSim prints it, one line
// per schedule, which is how a worker process reports to runPool.
type scheduleResult struct {
	Seed      uint64
	Ops       int
	Simulated time.Duration
	Wall      time.Duration
	Failed    bool
}

const resultPrefix = "sim-schedule:"

func (r scheduleResult) String() string {
	return fmt.Sprintf("%s seed=%d ops=%d simulated=%s wall=%s failed=%t", resultPrefix, r.Seed, r.Ops, r.Simulated, r.Wall, r.Failed)
}

// parseResult reads a line String wrote.
func parseResult(line string) (scheduleResult, error) {
	var r scheduleResult
	var sim, wall string
	_, err := fmt.Sscanf(line, resultPrefix+" seed=%d ops=%d simulated=%s wall=%s failed=%t", &r.Seed, &r.Ops, &sim, &wall, &r.Failed)
	if err != nil {
		return r, fmt.Errorf("sim: worker result %q: %w", line, err)
	}
	if r.Simulated, err = time.ParseDuration(sim); err != nil {
		return r, fmt.Errorf("sim: worker result %q: %w", line, err)
	}
	if r.Wall, err = time.ParseDuration(wall); err != nil {
		return r, fmt.Errorf("sim: worker result %q: %w", line, err)
	}
	return r, nil
}

// runPool runs each seed in a worker process of its own (this test
// binary with -sim.seed), jobs at a time. Processes, not goroutines: a
// schedule seeds process-wide sources — math/rand's global source, from
// which raft draws its election timeouts, and crypto/rand through
// cryptotest.SetGlobalRandom, which refuses parallel tests — so two
// schedules in one process would draw from each other's streams and a
// seed would no longer replay. A worker runs exactly what
// `make sim SEED=s` runs.
func runPool(t *testing.T, seeds []uint64, jobs int) []scheduleResult {
	exe, err := os.Executable()
	if err != nil {
		t.Fatalf("sim: the test binary: %v", err)
	}
	var (
		mu  sync.Mutex
		out []scheduleResult
	)
	sem := make(chan struct{}, jobs)
	t.Run("pool", func(t *testing.T) {
		for _, seed := range seeds {
			t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
				t.Parallel()
				sem <- struct{}{}
				defer func() { <-sem }()
				r := runWorker(t, exe, seed)
				mu.Lock()
				out = append(out, r)
				mu.Unlock()
			})
		}
	})
	return out
}

// runWorker runs one seed in a worker process and returns what it
// reported; a worker that fails, or ends without reporting, fails t with
// its output.
func runWorker(t *testing.T, exe string, seed uint64) scheduleResult {
	// A worker that hangs ends with the test binary's timeout panic (and
	// its goroutines' stacks) long after any schedule should have, and a
	// minute before this process's own timeout would end it unheard.
	timeout := 30 * time.Minute
	if d, ok := t.Deadline(); ok {
		timeout = max(min(timeout, time.Until(d)-time.Minute), time.Minute)
	}
	args := []string{"-test.run=^TestSim$", "-test.v", "-test.timeout=" + timeout.String(),
		fmt.Sprintf("-sim.seed=%d", seed), "-sim.duration=" + flagDuration.String(),
		fmt.Sprintf("-sim.nodes=%d", *flagNodes), "-sim.think=" + flagThink.String(), "-sim.jobs=1"}
	start := time.Now()
	cmd := exec.Command(exe, args...)
	// A race-enabled binary sleeps a second before it exits (GORACE
	// atexit_sleep_ms, for reports of goroutines still running); a worker
	// has ended them all, so that second would only be waited out.
	cmd.Env = append(os.Environ(), "GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	runErr := cmd.Run()
	r := scheduleResult{Seed: seed, Wall: time.Since(start), Failed: true}
	reported := false
	sc := bufio.NewScanner(bytes.NewReader(buf.Bytes()))
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		if line := sc.Text(); strings.HasPrefix(line, resultPrefix) {
			pr, err := parseResult(line)
			if err != nil {
				t.Error(err)
				continue
			}
			r, reported = pr, true
		}
	}
	switch {
	case !reported:
		t.Errorf("sim: worker for seed %d ended without a result (%v):\n%s", seed, runErr, buf.String())
		r.Failed = true
	case r.Failed || runErr != nil:
		t.Errorf("sim: seed %d failed (%v):\n%s", seed, runErr, buf.String())
		r.Failed = true
	default:
		t.Logf("seed %d: %d ops, %.1f simulated s in %.2f wall s", seed, r.Ops, r.Simulated.Seconds(), r.Wall.Seconds())
	}
	return r
}
