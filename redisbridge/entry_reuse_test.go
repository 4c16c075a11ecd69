package redisbridge

import (
	"context"
	"fmt"
	"net"
	"slices"
	"sync"
	"testing"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/fsm"
	"github.com/locknode/locknode/fsm/reply"
)

// keepingBackend records the Command of every Apply; with failNext set,
// the next Apply fails and keeps its Command, as a forward still queued
// for the leader does when the wait for it ends.
type keepingBackend struct {
	*fakeBackend
	mu       sync.Mutex
	seen     []*fsm.Command
	failNext bool
	kept     *fsm.Command
	keptArgs []string
}

func (b *keepingBackend) Apply(ctx context.Context, cmd *fsm.Command) (fsm.Result, error) {
	b.mu.Lock()
	b.seen = append(b.seen, cmd)
	fail := b.failNext
	b.failNext = false
	if fail {
		b.kept = cmd
		for _, a := range cmd.Args {
			b.keptArgs = append(b.keptArgs, string(a))
		}
	}
	b.mu.Unlock()
	if fail {
		return fsm.Result{}, fmt.Errorf("forward still queued: %w", api.ErrNoLeader)
	}
	return b.fakeBackend.Apply(ctx, cmd)
}

func (b *keepingBackend) last() *fsm.Command {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.seen[len(b.seen)-1]
}

// A connection's writes that wait for their outcome share one log entry
// Command (the largest allocation of a lock cycle's request), each filled
// afresh; after an Apply that failed the connection lets it go, since a
// queued forward may still read it.
func TestSyncWritesReuseTheirCommand(t *testing.T) {
	b := &keepingBackend{fakeBackend: newFakeBackend(t)}
	s := testServerOn(t, b, Config{})
	c := dialRaw(t, s)

	if v := c.do("SET", "lock", "tok1", "NX", "PX", "30000"); v.Str != "OK" {
		t.Fatalf("SET NX: %v", v)
	}
	first := b.last()
	if v := c.do("EVAL", casDelete, "1", "lock", "tok1"); v.Type != ':' || v.Int != 1 {
		t.Fatalf("compare-and-delete: %v", v)
	}
	if b.last() != first {
		t.Fatal("the second write of the connection got a new Command")
	}
	if first.Op != fsm.OpEval || first.Script == nil || len(first.Args) != 1 || first.Key != "" {
		t.Fatalf("the reused Command was not filled afresh: %+v", first)
	}

	b.mu.Lock()
	b.failNext = true
	b.mu.Unlock()
	if v := c.do("SET", "lock", "tok2", "NX", "PX", "30000"); v.Type != '-' {
		t.Fatalf("SET NX with a failing backend: %v", v)
	}
	if v := c.do("SET", "lock", "tok3", "NX", "PX", "30000"); v.Str != "OK" {
		t.Fatalf("SET NX after the failure: %v", v)
	}
	if b.last() == b.kept {
		t.Fatal("the Command an Apply failed with was reused")
	}
	var args []string
	for _, a := range b.kept.Args {
		args = append(args, string(a))
	}
	if !slices.Equal(args, b.keptArgs) {
		t.Fatalf("the failed write's Command changed after it: %q, was %q", args, b.keptArgs)
	}
	if v := c.do("GET", "lock"); v.Str != "tok3" {
		t.Fatalf("GET: %v", v)
	}
}

// answeringBackend answers every Apply at once with OK, allocating
// nothing, so that what a test counts is the bridge's own.
type answeringBackend struct{ *fakeBackend }

func (answeringBackend) Apply(context.Context, *fsm.Command) (fsm.Result, error) {
	return fsm.Result{Index: 1, Reply: reply.OK}, nil
}

// A write that waits for its outcome costs the bridge one allocation
// around the Apply (its request context): the Command is the
// connection's, and the context's cancel is no function value of its
// own. Fails if either allocates per request again.
func TestSyncWriteAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes allocation")
	}
	s := testServerOn(t, answeringBackend{newFakeBackend(t)}, Config{})
	client, server := net.Pipe()
	defer client.Close()
	defer server.Close()
	c := s.newConn(server)
	args := [][]byte{[]byte("SET"), []byte("lock"), []byte("tok"), []byte("NX"), []byte("PX"), []byte("30000")}
	if a := testing.AllocsPerRun(200, func() {
		cmd := c.entry()
		cmd.Op, cmd.Args = fsm.OpRedis, args
		if _, ok := c.apply(cmd); !ok {
			t.Fatal("apply failed")
		}
	}); a > 1 {
		t.Errorf("a waited-for write allocates %.1f times in the bridge, want at most 1", a)
	}
}
