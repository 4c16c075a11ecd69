package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/client"
)

// waitNoticeDelay keeps an uncontended lock quiet: the notice appears
// only when the acquire did not succeed at once.
const waitNoticeDelay = 300 * time.Millisecond

// isTerminal reports whether w is a character device (a terminal), so
// scripts that capture stderr do not get progress lines.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// waitingNotice prints, once, that locknode is waiting for name and who
// holds it, unless the returned stop is called first. stop waits for the
// notice goroutine, so nothing is printed after it returns.
func waitingNotice(ctx context.Context, c *client.Client, name string, w io.Writer) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	// Ends on stop (cancel) or after one inspect.
	go func() {
		defer close(done)
		t := time.NewTimer(waitNoticeDelay)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		ictx, icancel := context.WithTimeout(ctx, 2*time.Second)
		defer icancel()
		info, err := c.Inspect(ictx, name, api.ReadOptions{Stale: true})
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			fmt.Fprintf(w, "locknode lock: waiting for %s\n", name)
			return
		}
		fmt.Fprintf(w, "locknode lock: waiting for %s, %s\n", name, describeHolders(info))
	}()
	return func() { cancel(); <-done }
}

// describeHolders says who holds a lock, since when and for how long,
// for people.
func describeHolders(info api.LockInfo) string {
	return describeHoldersAt(info, time.Now())
}

func describeHoldersAt(info api.LockInfo, now time.Time) string {
	if len(info.Holders) == 0 {
		if info.LockDelayMs > 0 {
			return fmt.Sprintf("free in %v (lock-delay after its last holder)", time.Duration(info.LockDelayMs)*time.Millisecond)
		}
		return "not held right now"
	}
	parts := make([]string, 0, len(info.Holders))
	for _, h := range info.Holders {
		p := "held by " + h.Owner
		if h.Session != "" {
			p += " (session " + h.Session + ")"
		}
		if len(h.Meta) > 0 {
			p += " [" + metaText(h.Meta) + "]"
		}
		if ago := since(h.GrantedMs, now); ago != "" {
			p += fmt.Sprintf(", since %s (%s ago)", time.UnixMilli(h.GrantedMs).UTC().Format(time.RFC3339), ago)
		}
		if h.TTLMs >= 0 {
			p += fmt.Sprintf(", lease ends in %v", (time.Duration(h.TTLMs) * time.Millisecond).Round(time.Millisecond))
		}
		if h.Deadline > 0 {
			p += " (at " + time.UnixMilli(h.Deadline).UTC().Format(time.RFC3339) + ")"
		}
		parts = append(parts, p)
	}
	if len(info.Waiters) > 0 {
		parts = append(parts, fmt.Sprintf("%d waiting", len(info.Waiters)))
	}
	return strings.Join(parts, "; ")
}

// waitVerdictGrace bounds what `lock --wait W` adds to W: the last
// answer's way back, and finding out who holds the lock.
const waitVerdictGrace = 500 * time.Millisecond

// lockFailure reports why name could not be acquired and picks the exit
// code. A wait that ran out is "busy" only when the lock really is held:
// a cluster without quorum also lets the wait run out, and that must not
// look like contention to a script.
func lockFailure(ctx context.Context, c *client.Client, name string, wait time.Duration, err error, stderr io.Writer) int {
	waited := ""
	if wait > 0 {
		waited = fmt.Sprintf(" (waited %v)", wait)
	}
	busy := errors.Is(err, api.ErrLocked) || errors.Is(err, api.ErrLockDelay)
	var answered *client.Error
	if errors.Is(err, context.DeadlineExceeded) && !errors.As(err, &answered) {
		fmt.Fprintf(stderr, "locknode lock: %s%s: no node answered in time; check --endpoints / LOCKNODE_ENDPOINTS and that the nodes run (%s)\n", name, waited, api.ClientText(err))
		return exitLockFailed
	}
	if !busy && !errors.Is(err, api.ErrWaitTimeout) {
		fmt.Fprintf(stderr, "locknode lock: %s%s: %v\n", name, waited, explain(err))
		return exitLockFailed
	}
	// Short: the verdict is due (waitVerdictGrace); a node without a
	// leader answers so within its own bound.
	ictx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	info, ierr := c.Inspect(ictx, name, api.ReadOptions{})
	switch {
	case ierr == nil:
		fmt.Fprintf(stderr, "locknode lock: %s is busy%s: %s\n", name, waited, describeHolders(info))
		return exitLockBusy
	case busy:
		// The cluster answered "held" a moment ago.
		fmt.Fprintf(stderr, "locknode lock: %s is held%s: %v\n", name, waited, api.ClientText(err))
		return exitLockBusy
	case errors.Is(ierr, context.DeadlineExceeded) && !errors.As(ierr, &answered):
		fmt.Fprintf(stderr, "locknode lock: %s%s: the wait ran out and no node answered in time; check --endpoints / LOCKNODE_ENDPOINTS and that the nodes run\n", name, waited)
		return exitLockFailed
	default:
		fmt.Fprintf(stderr, "locknode lock: %s%s: the wait ran out and the cluster does not answer: %v\n", name, waited, explain(ierr))
		return exitLockFailed
	}
}
