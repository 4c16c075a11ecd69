//go:build locknode_next

package fsm

import (
	"bytes"
	"errors"
	"testing"

	"github.com/locknode/locknode/fsm/reply"
)

// The synthetic next version decides as the current release until
// version 5 is active: its op is refused, a short session TTL is
// accepted, and snapshots are format 5. From version 5 on, all three
// change, and a format-6 snapshot carries the notes.
func TestNextVersionGated(t *testing.T) {
	tab := New(Config{})
	idx := uint64(0)
	apply := func(c *Command) Result {
		idx++
		c.Time = int64(1000 + idx)
		return tab.Apply(idx, c)
	}
	if r := apply(&Command{Op: OpNote, Key: "k", Owner: "v1"}); !errors.Is(r.Err, ErrBadCommand) {
		t.Fatalf("OpNote at version 1: %v", r.Err)
	}
	if r := apply(&Command{Op: OpSessionOpen, Session: "s1", TTL: 500}); r.Err != nil {
		t.Fatalf("short session at version 1: %v", r.Err)
	}
	if b := snap(t, tab); b[0] != snapVersion {
		t.Fatalf("format %d before activation", b[0])
	}
	if r := apply(&Command{Op: OpSetVersion, Token: 5}); r.Err != nil || tab.Version() != 5 {
		t.Fatalf("activation: %v, at %d", r.Err, tab.Version())
	}
	if r := apply(&Command{Op: OpNote, Key: "k", Owner: "v1"}); r.Err != nil || r.Reply.Kind != reply.Nil {
		t.Fatalf("first note: %+v", r)
	}
	if r := apply(&Command{Op: OpNote, Key: "k", Owner: "v2"}); r.Err != nil || r.Reply.Str != "v1" {
		t.Fatalf("second note: %+v", r)
	}
	if r := apply(&Command{Op: OpSessionOpen, Session: "s2", TTL: 500}); !errors.Is(r.Err, ErrBadTTL) {
		t.Fatalf("short session at version 5: %v", r.Err)
	}
	b := snap(t, tab)
	if b[0] != snapVersion6 || b[1] != 5 {
		t.Fatalf("format %d of version %d after activation", b[0], b[1])
	}
	n := New(Config{})
	if err := n.Restore(bytes.NewReader(b)); err != nil {
		t.Fatal(err)
	}
	if v, ok := n.Note("k"); !ok || v != "v2" || n.Version() != 5 || !bytes.Equal(snap(t, n), b) {
		t.Fatalf("restored: note %q %v, version %d", v, ok, n.Version())
	}
}
