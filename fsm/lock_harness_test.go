package fsm

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the expected output of testdata/*.txt")

// errNames names sentinels in test output.
var errNames = []struct {
	err  error
	name string
}{
	{ErrBadCommand, "ErrBadCommand"}, {ErrLocked, "ErrLocked"}, {ErrNotOwner, "ErrNotOwner"},
	{ErrNotHeld, "ErrNotHeld"}, {ErrNoSuchKey, "ErrNoSuchKey"}, {ErrWaitTimeout, "ErrWaitTimeout"},
	{ErrCancelled, "ErrCancelled"}, {ErrPermits, "ErrPermits"}, {ErrWrongType, "ErrWrongType"},
	{ErrSessionUnknown, "ErrSessionUnknown"}, {ErrSessionExists, "ErrSessionExists"},
	{ErrLimit, "ErrLimit"}, {ErrBadTTL, "ErrBadTTL"}, {ErrStaleFence, "ErrStaleFence"},
	{ErrLockDelay, "ErrLockDelay"}, {ErrBadVersion, "ErrBadVersion"}, {ErrMaxHold, "ErrMaxHold"},
}

func errName(err error) string {
	for _, e := range errNames {
		if errors.Is(err, e.err) {
			return e.name
		}
	}
	return err.Error()
}

var reasonNames = map[Reason]string{ReasonRelease: "release", ReasonExpired: "expired",
	ReasonSession: "session", ReasonSessionClosed: "closed", ReasonForced: "forced"}

// fmtResult renders a result and its events (EvChanged omitted: noise).
func fmtResult(r Result) string {
	var b strings.Builder
	switch {
	case r.Err != nil:
		fmt.Fprintf(&b, "err=%s", errName(r.Err))
		if r.Fence != 0 {
			fmt.Fprintf(&b, " fence=%d", r.Fence)
		}
	case r.Granted:
		fmt.Fprintf(&b, "granted fence=%d deadline=%d count=%d", r.Fence, r.Deadline, r.Count)
	case r.Queued:
		fmt.Fprintf(&b, "queued deadline=%d", r.Deadline)
	case r.Released:
		fmt.Fprintf(&b, "released fence=%d", r.Fence)
	default:
		fmt.Fprintf(&b, "ok count=%d fence=%d", r.Count, r.Fence)
	}
	b.WriteString("\n")
	for _, e := range r.Events {
		switch e.Kind {
		case EvGranted:
			fmt.Fprintf(&b, "  granted %s keys=%s owner=%s fence=%d deadline=%d count=%d\n",
				e.WaiterID, strings.Join(e.Keys, ","), e.Owner, e.Fence, e.Deadline, e.Count)
		case EvWaitEnded:
			fmt.Fprintf(&b, "  wait-ended %s err=%s\n", e.WaiterID, errName(e.Err))
		case EvReleased:
			fmt.Fprintf(&b, "  released %s owner=%s fence=%d reason=%s\n", e.Key, e.Owner, e.Fence, reasonNames[e.Reason])
		}
	}
	return b.String()
}

// fmtInfo renders Inspect's answer.
func fmtInfo(li LockInfo, err error) string {
	if err != nil {
		return "err=" + errName(err) + "\n"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "kind=%d permits=%d fence=%d delay=%d deadline=%d\n", li.Kind, li.Permits, li.Fence, li.DelayUntil, li.Deadline)
	for _, h := range li.Holders {
		fmt.Fprintf(&b, "  hold %s %s count=%d fence=%d deadline=%d", h.Owner, h.Mode, h.Count, h.Fence, h.Deadline)
		if h.Session != "" {
			fmt.Fprintf(&b, " session=%s", h.Session)
		}
		b.WriteString("\n")
	}
	for _, w := range li.Waiters {
		fmt.Fprintf(&b, "  wait %s %s owner=%s keys=%s deadline=%d\n", w.ID, w.Mode, w.Owner, strings.Join(w.Keys, ","), w.Deadline)
	}
	return b.String()
}

// parseCmd turns `op k=v k=v flag` into a command. at= sets Time (sticky).
func (h *harness) parseCmd(line string) (*Command, string, error) {
	f := strings.Fields(line)
	c := &Command{Time: h.time}
	ops := map[string]Op{"tick": OpTick, "acquire": OpAcquire, "release": OpRelease, "extend": OpExtend,
		"cancel": OpCancelWait, "session-open": OpSessionOpen, "keepalive": OpSessionKeepAlive,
		"session-close": OpSessionClose, "fence": OpFenceCheck}
	op, ok := ops[f[0]]
	if !ok {
		return nil, f[0], nil
	}
	c.Op = op
	for _, kv := range f[1:] {
		k, v, _ := strings.Cut(kv, "=")
		num := func() int64 {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				panic(fmt.Sprintf("bad number in %q", kv))
			}
			return n
		}
		switch k {
		case "at":
			c.Time = num()
		case "key":
			c.Key = v
		case "keys":
			c.Keys = strings.Split(v, ",")
		case "owner":
			c.Owner = v
		case "ttl":
			c.TTL = num()
		case "wait":
			c.Wait = num()
		case "id":
			c.ReqID = v
		case "mode":
			m, ok := ParseMode(v)
			if !ok {
				return nil, "", fmt.Errorf("bad mode %q", v)
			}
			c.Mode = m
		case "permits":
			c.Permits = int(num())
		case "reentrant":
			c.Reentrant = true
		case "force":
			c.Force = true
		case "session":
			c.Session = v
		case "delay":
			c.LockDelay = num()
		case "maxhold":
			c.MaxHold = num()
		case "token":
			c.Token = uint64(num())
		default:
			return nil, "", fmt.Errorf("unknown argument %q", kv)
		}
	}
	if c.Time > h.time {
		h.time = c.Time
	}
	return c, "", nil
}

// run executes one script line and returns its output.
func (h *harness) run(line string) (string, error) {
	c, other, err := h.parseCmd(line)
	if err != nil {
		return "", err
	}
	if c != nil {
		r := h.apply(*c)
		if err := checkInvariants(h.tab); err != nil {
			return "", fmt.Errorf("invariant broken after %q: %v", line, err)
		}
		if err := checkRoundTrip(h.tab); err != nil {
			return "", fmt.Errorf("after %q: %v", line, err)
		}
		return fmtResult(r), nil
	}
	f := strings.Fields(line)
	arg := func(name string) string {
		for _, kv := range f[1:] {
			if k, v, _ := strings.Cut(kv, "="); k == name {
				return v
			}
		}
		return ""
	}
	switch other {
	case "inspect":
		at, _ := strconv.ParseInt(arg("at"), 10, 64)
		return fmtInfo(h.tab.Inspect(arg("key"), at)), nil
	case "stats":
		// Memory is checked against a recount after every step
		// (checkMemory); its figure would tie the goldens to the
		// accounting's constants.
		st := h.tab.Stats()
		return fmt.Sprintf("{Keys:%d Locks:%d Holds:%d Waiters:%d Sessions:%d ReqIDs:%d Fences:%d}\n",
			st.Keys, st.Locks, st.Holds, st.Waiters, st.Sessions, st.ReqIDs, st.Fences), nil
	case "next":
		at, ok := h.tab.NextDeadline()
		return fmt.Sprintf("next=%d ok=%v\n", at, ok), nil
	}
	return "", fmt.Errorf("unknown command %q", other)
}

// TestGolden runs testdata/*.txt: blocks of one command line, "----",
// the expected output, and a blank line. -rewrite rewrites the outputs.
func TestGolden(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.txt")
	if len(files) == 0 {
		t.Fatal("no testdata")
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			h := newHarness(t)
			var out strings.Builder
			lines := strings.Split(string(data), "\n")
			for i := 0; i < len(lines); i++ {
				line := lines[i]
				if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
					out.WriteString(line + "\n")
					continue
				}
				// Expected output: after "----" up to a blank line.
				var want strings.Builder
				j := i
				if i+1 < len(lines) && lines[i+1] == "----" {
					for j = i + 2; j < len(lines) && lines[j] != ""; j++ {
						want.WriteString(lines[j] + "\n")
					}
				}
				got, err := h.run(line)
				if err != nil {
					t.Fatalf("%s:%d: %v", file, i+1, err)
				}
				if !*rewrite && got != want.String() {
					t.Errorf("%s:%d: %s\n got:\n%s want:\n%s", file, i+1, line, got, want.String())
				}
				out.WriteString(line + "\n----\n" + got + "\n")
				i = j // the blank line after the block is written above
			}
			if *rewrite {
				s := strings.TrimRight(out.String(), "\n") + "\n"
				if err := os.WriteFile(file, []byte(s), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// checkInvariants checks the table's safety properties and the
// consistency of its indexes after an Apply.
func checkInvariants(t *Table) error {
	// Stats keeps its counts as the table changes: they must equal a
	// full recount.
	var recount Stats
	for _, v := range t.keys {
		if v.Kind() == KindLock {
			recount.Locks++
			recount.Holds += v.lock().numHolders()
		}
	}
	if s := t.Stats(); s.Locks != recount.Locks || s.Holds != recount.Holds || s.Keys != len(t.keys) {
		return fmt.Errorf("stats %+v, recount %d locks %d holds", s, recount.Locks, recount.Holds)
	}
	if err := checkMemory(t); err != nil {
		return err
	}
	for k, v := range t.keys {
		if v.Kind() != KindLock {
			continue
		}
		l := v.lock()
		if l.numHolders() == 0 && l.DelayUntil() <= t.now {
			return fmt.Errorf("%q: empty lock kept", k)
		}
		if x := l.rare(); x != nil && len(x.more) == 0 && x.more != nil {
			return fmt.Errorf("%q: empty holder list kept", k)
		}
		owners := map[string]bool{}
		excl, shared := 0, 0
		for i := 0; i < l.numHolders(); i++ {
			h := l.holder(i)
			if owners[h.Owner] {
				return fmt.Errorf("%q: owner %q twice", k, h.Owner)
			}
			owners[h.Owner] = true
			if h.Count < 1 || h.Fence > l.Fence() || h.Fence == 0 {
				return fmt.Errorf("%q: bad hold %+v (lock fence %d)", k, *h, l.Fence())
			}
			if h.Deadline != 0 && h.Deadline <= t.now {
				return fmt.Errorf("%q: hold of %q past its deadline", k, h.Owner)
			}
			if h.session() != "" {
				if t.sessions[h.session()] == nil {
					return fmt.Errorf("%q: hold bound to dead session", k)
				}
				if _, ok := t.sessHolds[h.session()][holdRef{k, h.Owner}]; !ok {
					return fmt.Errorf("%q: session index misses hold", k)
				}
			} else if h.Deadline == 0 {
				return fmt.Errorf("%q: hold without deadline or session", k)
			}
			switch h.Mode {
			case Exclusive:
				excl++
			case Shared:
				shared++
			case Semaphore:
				if l.Permits() == 0 {
					return fmt.Errorf("%q: semaphore hold on a plain lock", k)
				}
			}
		}
		if l.Permits() > 0 && (excl+shared > 0 || l.numHolders() > l.Permits()) {
			return fmt.Errorf("%q: semaphore of %d with holders %d/%d/%d", k, l.Permits(), excl, shared, l.numHolders())
		}
		if excl > 1 || (excl == 1 && shared > 0) {
			return fmt.Errorf("%q: %d writers with %d readers", k, excl, shared)
		}
	}
	n := 0
	for k, q := range t.queues {
		if len(q) == 0 {
			return fmt.Errorf("empty queue %q kept", k)
		}
		for _, w := range q {
			if t.waiters[w.ID] != w {
				return fmt.Errorf("queue %q: waiter %q not indexed", k, w.ID)
			}
			if w.Deadline <= t.now {
				return fmt.Errorf("waiter %q past its deadline", w.ID)
			}
			n++
		}
		// The head must not fit: it would have been granted, unless its
		// grant was put off to the next entry (a hold granted and ended
		// in this one), which is then due.
		if t.waiterFits(q[0]) && !pumpDue(t, k) {
			return fmt.Errorf("queue %q: head %q fits but waits", k, q[0].ID)
		}
	}
	m := 0
	for _, w := range t.waiters {
		m += len(w.Keys)
	}
	if n != m {
		return fmt.Errorf("queues hold %d entries, waiters %d", n, m)
	}
	for id, hs := range t.sessHolds {
		for r := range hs {
			v := t.keys[r.key]
			if v == nil || v.Kind() != KindLock || v.lock().holdOf(r.owner) == nil || v.lock().holdOf(r.owner).session() != id {
				return fmt.Errorf("session index has stale hold %+v", r)
			}
		}
	}
	for id := range t.sessions {
		if s := t.sessions[id]; s.Deadline <= t.now {
			return fmt.Errorf("session %q past its deadline", id)
		}
	}
	return nil
}

// checkRoundTrip restores a snapshot into a fresh table and compares the
// snapshots byte for byte.
func checkRoundTrip(t *Table) error {
	var a, b bytes.Buffer
	if err := t.Snapshot(&a); err != nil {
		return err
	}
	n := New(t.cfg)
	if err := n.Restore(bytes.NewReader(a.Bytes())); err != nil {
		return err
	}
	if err := n.Snapshot(&b); err != nil {
		return err
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		return fmt.Errorf("snapshot changed by restore")
	}
	return nil
}

// eventsOf returns r's events of one kind.
func eventsOf(r Result, kind EventKind) []Event {
	var out []Event
	for _, e := range r.Events {
		if e.Kind == kind {
			out = append(out, e)
		}
	}
	return out
}

// pumpDue reports whether a put-off grant on key's queue is due after
// the table's time.
func pumpDue(t *Table, key string) bool {
	for _, it := range t.due[duePump-1] {
		if it.id == key && it.at > t.now {
			return true
		}
	}
	return false
}
