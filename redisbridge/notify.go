package redisbridge

import (
	"strings"

	"github.com/locknode/locknode/fsm"
)

// Keyspace notifications (Redis 7 notify.c): the FSM emits every applied
// entry's keyspace events (fsm.EvKeyspace) on every node; each node's
// bridge publishes those its notify-keyspace-events selects to its own
// subscribers, on __keyspace@0__:<key> (message: the event) and
// __keyevent@0__:<event> (message: the key), through the same hub as
// PUBLISH, so ACL channel rules and the subscriber output limits apply.

// notifyFlags is a set of Redis' notify-keyspace-events classes.
type notifyFlags uint32

// The classes, as Redis 7's NOTIFY_* bits.
const (
	notifyKeyspace notifyFlags = 1 << iota // K
	notifyKeyevent                         // E
	notifyGeneric                          // g
	notifyString                           // $
	notifyList                             // l
	notifySet                              // s
	notifyHash                             // h
	notifyZset                             // z
	notifyExpired                          // x
	notifyEvicted                          // e
	notifyStream                           // t
	notifyKeyMiss                          // m
	notifyModule                           // d
	notifyNew                              // n

	// notifyAll is "A": every class but key-miss and new, as Redis.
	notifyAll = notifyGeneric | notifyString | notifyList | notifySet | notifyHash | notifyZset |
		notifyExpired | notifyEvicted | notifyStream | notifyModule
)

// parseNotifyFlags is keyspaceEventsStringToFlags; ok is false when s
// holds a character that names no class.
func parseNotifyFlags(s string) (f notifyFlags, ok bool) {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case 'A':
			f |= notifyAll
		case 'g':
			f |= notifyGeneric
		case '$':
			f |= notifyString
		case 'l':
			f |= notifyList
		case 's':
			f |= notifySet
		case 'h':
			f |= notifyHash
		case 'z':
			f |= notifyZset
		case 'x':
			f |= notifyExpired
		case 'e':
			f |= notifyEvicted
		case 'K':
			f |= notifyKeyspace
		case 'E':
			f |= notifyKeyevent
		case 't':
			f |= notifyStream
		case 'm':
			f |= notifyKeyMiss
		case 'd':
			f |= notifyModule
		case 'n':
			f |= notifyNew
		default:
			return 0, false
		}
	}
	return f, true
}

// String is keyspaceEventsFlagsToString, as CONFIG GET answers: "A" for
// all of its classes, else each class in Redis' order, then K, E and m.
// As Redis 7.0 does, "n" is not shown next to "A" (the class stays on).
func (f notifyFlags) String() string {
	var b strings.Builder
	if f&notifyAll == notifyAll {
		b.WriteByte('A')
	} else {
		for _, c := range []struct {
			f notifyFlags
			c byte
		}{
			{notifyGeneric, 'g'}, {notifyString, '$'}, {notifyList, 'l'}, {notifySet, 's'},
			{notifyHash, 'h'}, {notifyZset, 'z'}, {notifyExpired, 'x'}, {notifyEvicted, 'e'},
			{notifyStream, 't'}, {notifyModule, 'd'}, {notifyNew, 'n'},
		} {
			if f&c.f != 0 {
				b.WriteByte(c.c)
			}
		}
	}
	if f&notifyKeyspace != 0 {
		b.WriteByte('K')
	}
	if f&notifyKeyevent != 0 {
		b.WriteByte('E')
	}
	if f&notifyKeyMiss != 0 {
		b.WriteByte('m')
	}
	return b.String()
}

// notifyClass is the class of each event the FSM emits (Redis' table:
// the class it passes to notifyKeyspaceEvent).
var notifyClass = map[string]notifyFlags{
	fsm.NotifyNew:         notifyNew,
	fsm.NotifySet:         notifyString,
	fsm.NotifyIncrby:      notifyString,
	fsm.NotifyIncrbyFloat: notifyString,
	fsm.NotifyAppend:      notifyString,
	fsm.NotifyDel:         notifyGeneric,
	fsm.NotifyExpire:      notifyGeneric,
	fsm.NotifyPersist:     notifyGeneric,
	fsm.NotifyExpired:     notifyExpired,
	fsm.NotifyHset:        notifyHash,
	fsm.NotifyHdel:        notifyHash,
	fsm.NotifyHincrby:     notifyHash,
	fsm.NotifySadd:        notifySet,
	fsm.NotifySrem:        notifySet,
	fsm.NotifyZadd:        notifyZset,
	fsm.NotifyZincr:       notifyZset,
	fsm.NotifyZrem:        notifyZset,
	fsm.NotifyZremByScore: notifyZset,
	fsm.NotifyLpush:       notifyList,
	fsm.NotifyRpush:       notifyList,
	fsm.NotifyLpop:        notifyList,
	fsm.NotifyRpop:        notifyList,
	fsm.NotifyLrem:        notifyList,
}

// keyspaceEventer is a Backend whose applied entries carry fsm.EvKeyspace
// only while asked to (cluster.Node, cluster.Local): a node without
// notifications pays nothing for them.
type keyspaceEventer interface {
	WantKeyspaceEvents() (done func())
}

// setNotify sets notify-keyspace-events, and asks the Backend for the
// keyspace events while the flags select any: K or E and a class.
func (s *Server) setNotify(f notifyFlags) {
	s.notifyMu.Lock()
	defer s.notifyMu.Unlock()
	s.notify.Store(uint32(f))
	want := f&(notifyKeyspace|notifyKeyevent) != 0 && f&^(notifyKeyspace|notifyKeyevent|notifyKeyMiss) != 0
	switch {
	case want && s.notifyDone == nil:
		if ke, ok := s.b.(keyspaceEventer); ok {
			s.notifyDone = ke.WantKeyspaceEvents()
		}
	case !want && s.notifyDone != nil:
		s.notifyDone()
		s.notifyDone = nil
	}
}

// stopNotify ends the demand for keyspace events (Close).
func (s *Server) stopNotify() {
	s.notifyMu.Lock()
	defer s.notifyMu.Unlock()
	if s.notifyDone != nil {
		s.notifyDone()
		s.notifyDone = nil
	}
}

// Channel prefixes: locknode has one database, 0.
const (
	keyspacePrefix = "__keyspace@0__:"
	keyeventPrefix = "__keyevent@0__:"
)

// notifyKeyspace publishes the keyspace event ev (fsm.EvKeyspace) as
// notifyKeyspaceEvent does, when f selects it: the keyspace message
// first, then the keyevent one. It runs on the apply path and never
// blocks (hub.publish only queues).
func (s *Server) notifyKeyspace(f notifyFlags, ev *fsm.Event) {
	class, ok := notifyClass[ev.Message]
	if !ok || f&class == 0 {
		return
	}
	if f&notifyKeyspace != 0 {
		s.hub.publish(keyspacePrefix+ev.Key, ev.Message)
	}
	if f&notifyKeyevent != 0 {
		s.hub.publish(keyeventPrefix+ev.Message, ev.Key)
	}
}
