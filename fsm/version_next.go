//go:build locknode_next

package fsm

import (
	"fmt"

	"github.com/locknode/locknode/fsm/reply"
)

// The synthetic next release, built with -tags locknode_next for the
// rolling-upgrade tests (make upgrade-test): it runs cluster versions
// 1..5, and version 5 brings, each under its gate,
//   - a new op, OpNote, which sets a key's note;
//   - a new snapshot format, 6, which adds the notes after format 5;
//   - a changed decision: a session TTL under one second is refused.
//
// Until version 5 is active it decides, writes and snapshots exactly as
// the current release does.
const (
	MinClusterVersion = 1
	// nextBuild: the synthetic next release (build tag locknode_next).
	nextBuild         = true
	MaxClusterVersion = 5
)

// OpNote sets the note of Key to Owner (removes it when Owner is empty)
// and replies with the note it replaces (Nil if none). Cluster version 5.
const OpNote Op = 250

// snapVersion6 is format 5 followed by the notes: count, then key and
// note per note in key order. Cluster version 5.
const snapVersion6 = 6

const maxSnapFormat = snapVersion6

// maxNotes bounds the notes; past it OpNote is refused (ErrLimit).
const maxNotes = 1000

// minSessionTTLv2 is the shortest session TTL from version 5 on.
const minSessionTTLv2 = 1000

func init() { opVersion[OpNote] = 5 }

type nextState struct {
	notes map[string]string
}

func (t *Table) snapFormat() byte {
	if t.gate(5) {
		return snapVersion6
	}
	return snapVersion
}

func (t *Table) applyNext(_ *applyCtx, cmd *Command) (Result, bool) {
	if cmd.Op != OpNote {
		return Result{}, false
	}
	if cmd.Key == "" || len(cmd.Key) > t.cfg.MaxKeyBytes || len(cmd.Owner) > t.cfg.MaxOwnerBytes {
		return Result{Err: errf(ErrBadCommand, "note: key of 1..%d bytes, note of at most %d", t.cfg.MaxKeyBytes, t.cfg.MaxOwnerBytes)}, true
	}
	old, had := t.next.notes[cmd.Key]
	switch {
	case cmd.Owner == "":
		delete(t.next.notes, cmd.Key)
	case !had && len(t.next.notes) >= maxNotes:
		return Result{Err: errf(ErrLimit, "%d notes", maxNotes)}, true
	default:
		if t.next.notes == nil {
			t.next.notes = make(map[string]string)
		}
		t.next.notes[cmd.Key] = cmd.Owner
	}
	if !had {
		return Result{Reply: reply.Null}, true
	}
	return Result{Reply: reply.NewBulk(old)}, true
}

// Note returns key's note (OpNote).
func (t *Table) Note(key string) (string, bool) {
	v, ok := t.next.notes[key]
	return v, ok
}

func (t *Table) encodeNext(e *enc) {
	if t.snapFormat() < snapVersion6 {
		return
	}
	keys := sortedKeys(t.next.notes)
	e.uvarint(uint64(len(keys)))
	for _, k := range keys {
		e.str(k)
		e.str(t.next.notes[k])
	}
}

func (n *Table) restoreNext(d *snapReader) error {
	if d.version < snapVersion6 {
		return nil
	}
	if n.version < 5 {
		return fmt.Errorf("snapshot format %d at cluster version %d", d.version, n.version)
	}
	c := d.count()
	prev := ""
	for i := 0; i < c && d.err == nil; i++ {
		k, v := d.str(), d.str()
		if d.err != nil {
			break
		}
		if (i > 0 && k <= prev) || k == "" || c > maxNotes {
			return fmt.Errorf("bad note %q", k)
		}
		if n.next.notes == nil {
			n.next.notes = make(map[string]string)
		}
		n.next.notes[k], prev = v, k
	}
	return d.err
}

func (t *Table) adoptNext(n *Table) { t.next = n.next }
func (t *Table) resetNext()         { t.next = nextState{} }

// sessionTTLRefused is the changed decision of version 5.
func (t *keySpace) sessionTTLRefused(ttl int64) error {
	if t.gate(5) && ttl < minSessionTTLv2 {
		return errf(ErrBadTTL, "session ttl %d ms under %d ms (cluster version 5)", ttl, minSessionTTLv2)
	}
	return nil
}
