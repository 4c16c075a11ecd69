package redisbridge

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/locknode/locknode/fsm"
)

// panickyBackend panics on every read once armed: a stand-in for a bug
// in a command's handler.
type panickyBackend struct {
	*fakeBackend
	armed *atomic.Bool
}

func (b panickyBackend) Read(ctx context.Context, stale bool, fn func(*fsm.Table, int64)) error {
	if b.armed.Load() {
		panic("a bug in a read")
	}
	return b.fakeBackend.Read(ctx, stale, fn)
}

// A command that panics closes its own connection with an error and is
// counted; the node and its other connections go on.
func TestCommandPanicClosesOnlyItsConnection(t *testing.T) {
	var armed atomic.Bool
	s := testServerOn(t, panickyBackend{newFakeBackend(t), &armed}, Config{})
	armed.Store(true)
	bad := dialRaw(t, s)
	if r := bad.do("GET", "k"); r.Type != '-' || !strings.Contains(r.Str, "internal error") {
		t.Fatalf("GET on a panicking read: %q", r)
	}
	if _, err := bad.br.ReadByte(); err == nil {
		t.Fatal("the connection stayed open after its command panicked")
	}
	if n := s.HandlerPanics(); n != 1 {
		t.Fatalf("HandlerPanics = %d, want 1", n)
	}
	armed.Store(false)
	good := dialRaw(t, s)
	if r := good.do("PING"); r.Str != "PONG" {
		t.Fatalf("PING on another connection: %q", r)
	}
	s.panics.Store(0) // counted on purpose: the helper's check is for bugs
}
