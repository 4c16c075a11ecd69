package cluster

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/locknode/locknode/auth"
	"github.com/locknode/locknode/fsm"
)

func forcedEv(key string) fsm.Event {
	return fsm.Event{Kind: fsm.EvReleased, Reason: fsm.ReasonForced, Key: key, Owner: "o"}
}

func TestForcedLog(t *testing.T) {
	var f forcedLog
	if got := f.lookup(1); got != nil {
		t.Fatalf("empty log: %v", got)
	}
	// Entries without a forced release are not kept; the forced ones of
	// an entry are, without its other events.
	f.record(1, []fsm.Event{{Kind: fsm.EvReleased, Reason: fsm.ReasonExpired, Key: "a"}})
	f.record(2, []fsm.Event{{Kind: fsm.EvGranted, Key: "b"}, forcedEv("b"), forcedEv("c")})
	if got := f.lookup(1); got != nil {
		t.Fatalf("entry 1: %v", got)
	}
	if got := f.lookup(2); len(got) != 2 || got[0].Key != "b" || got[1].Key != "c" {
		t.Fatalf("entry 2: %+v", got)
	}
	if got := f.lookup(3); got != nil {
		t.Fatalf("entry 3, not applied: %v", got)
	}
	// Past forcedLogSize later records, an entry is forgotten; the
	// latest ones are all found.
	for i := uint64(10); i < 10+forcedLogSize; i++ {
		f.record(i, []fsm.Event{forcedEv(fmt.Sprint(i))})
	}
	if got := f.lookup(2); got != nil {
		t.Fatalf("entry 2 after the ring wrapped: %v", got)
	}
	for _, i := range []uint64{10, 11 + forcedLogSize/2, 9 + forcedLogSize} {
		if got := f.lookup(i); len(got) != 1 || got[0].Key != fmt.Sprint(i) {
			t.Fatalf("entry %d: %+v", i, got)
		}
	}
	if got := f.lookup(11 + forcedLogSize); got != nil {
		t.Fatalf("an entry between records: %v", got)
	}
}

// syncWriter is a log destination read while nodes write to it.
type syncWriter struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *syncWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// A follower's forwarded Redis command that ends a hold by force gets
// the forced release in its result (Apply and ApplyAsync alike), and the
// leader audits it as a peer-port arrival.
func TestForwardedForcedReleaseEventsAndAudit(t *testing.T) {
	logs := make([]*syncWriter, 3)
	i := 0
	tc := newTestCluster(t, 3, func(c *Config) {
		logs[i] = &syncWriter{}
		c.Audit = auth.NewAudit(hclog.New(&hclog.LoggerOptions{Output: logs[i], Level: hclog.Warn}))
		i++
	})
	ctx := ctxT(t, 30*time.Second)
	l, f := tc.leader(10*time.Second), tc.follower()
	for _, key := range []string{"del", "set", "async"} {
		if r, err := l.Apply(ctx, &fsm.Command{Op: fsm.OpAcquire, Key: key, Owner: "o1", TTL: 600000}); err != nil || !r.Granted {
			t.Fatalf("acquire %s: %+v %v", key, r, err)
		}
	}
	check := func(what string, r fsm.Result, err error, key string) {
		t.Helper()
		if err != nil || r.Err != nil {
			t.Fatalf("%s: %v %v", what, err, r.Err)
		}
		if len(r.Events) != 1 || !isForced(r.Events[0]) || r.Events[0].Key != key || r.Events[0].Owner != "o1" {
			t.Fatalf("%s: events %+v", what, r.Events)
		}
	}
	r, err := f.Apply(ctx, &fsm.Command{Op: fsm.OpRedis, Args: [][]byte{[]byte("DEL"), []byte("del")}})
	check("DEL", r, err, "del")
	r, err = f.Apply(ctx, &fsm.Command{Op: fsm.OpRedis, Args: [][]byte{[]byte("SET"), []byte("set"), []byte("v")}})
	check("SET", r, err, "set")
	r, err = f.ApplyAsync(ctx, &fsm.Command{Op: fsm.OpRedis, Args: [][]byte{[]byte("DEL"), []byte("async")}}).Result()
	check("async DEL", r, err, "async")
	// A command that forces nothing gets no event.
	if r, err := f.Apply(ctx, &fsm.Command{Op: fsm.OpRedis, Args: [][]byte{[]byte("DEL"), []byte("del")}}); err != nil || len(r.Events) != 0 {
		t.Fatalf("second DEL: %+v %v", r, err)
	}

	lead := logs[tc.index(l)]
	tc.eventually(10*time.Second, "the leader's peer audit lines", func() bool {
		s := lead.String()
		for _, key := range []string{"del", "set", "async"} {
			if !strings.Contains(s, "key="+key+" ") && !strings.Contains(s, "key="+key+"\n") {
				return false
			}
		}
		return strings.Count(s, "event=force_release") == 3 && strings.Count(s, "via=peer") == 3 &&
			strings.Contains(s, "remote=127.0.0.1:")
	})
	if s := logs[tc.index(f)].String(); strings.Contains(s, "force_release") {
		t.Fatalf("the follower audited what it forwarded (its front end does):\n%s", s)
	}
}
