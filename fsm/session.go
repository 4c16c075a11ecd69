package fsm

import (
	"sort"
)

// Sessions. A hold bound to a session has no lease of its own: it lives as
// long as the session (capped by its MaxHold). Closing a session releases
// its holds cleanly (no lock-delay) and removes its waiters (ErrCancelled);
// a session that expires loses its holds (ReasonSession, lock-delay
// applies) and its waiters (ErrSessionUnknown).

// sessionTable is the sessions of a Table and the index of the holds and
// waiters bound to each. Ending a session ends those through the lock ops.
type sessionTable struct {
	*keySpace
	locks *lockTable

	sessions map[string]*Session
	// sessHolds and sessWaiters index the holds and waiters of each
	// session. Derived from holds and waiters.
	sessHolds   map[string]map[holdRef]struct{}
	sessWaiters map[string]map[string]struct{}
}

// reset empties the sessions.
func (t *sessionTable) reset() {
	t.sessions = make(map[string]*Session)
	t.sessHolds = make(map[string]map[holdRef]struct{})
	t.sessWaiters = make(map[string]map[string]struct{})
}

func (c *Config) checkSessionID(id string) error {
	if id == "" {
		return errf(ErrBadCommand, "empty session id")
	}
	if len(id) > c.MaxOwnerBytes {
		return errf(ErrLimit, "session id longer than %d bytes", c.MaxOwnerBytes)
	}
	return nil
}

// sessionOpen handles OpSessionOpen.
func (t *sessionTable) sessionOpen(ctx *applyCtx, cmd *Command) Result {
	if err := t.cfg.checkSessionID(cmd.Session); err != nil {
		return Result{Err: err}
	}
	if err := t.cfg.checkTTL("session ttl", cmd.TTL); err != nil {
		return Result{Err: err}
	}
	if err := t.sessionTTLRefused(cmd.TTL); err != nil {
		return Result{Err: err}
	}
	if t.sessions[cmd.Session] != nil {
		return Result{Err: errf(ErrSessionExists, "%q", cmd.Session)}
	}
	if len(t.sessions) >= t.cfg.MaxKeys {
		return Result{Err: errf(ErrLimit, "%d sessions", t.cfg.MaxKeys)}
	}
	if t.overMemory() {
		return Result{Err: t.errOOM()}
	}
	s := &Session{ID: cmd.Session, TTL: cmd.TTL, Deadline: ctx.now + cmd.TTL}
	t.sessions[s.ID] = s
	t.mem += sessionBytes(s)
	t.schedule(s.Deadline, dueSession, s.ID)
	return Result{Granted: true, Deadline: s.Deadline}
}

// sessionKeepAlive handles OpSessionKeepAlive: the deadline becomes
// now+TTL; a non-zero TTL in the command replaces the session's TTL.
func (t *sessionTable) sessionKeepAlive(ctx *applyCtx, cmd *Command) Result {
	if err := t.cfg.checkSessionID(cmd.Session); err != nil {
		return Result{Err: err}
	}
	if cmd.TTL != 0 {
		if err := t.cfg.checkTTL("session ttl", cmd.TTL); err != nil {
			return Result{Err: err}
		}
	}
	s := t.sessions[cmd.Session]
	if s == nil {
		return Result{Err: errf(ErrSessionUnknown, "%q", cmd.Session)}
	}
	t.keepAlive(ctx, s, cmd.TTL)
	return Result{Granted: true, Deadline: s.Deadline}
}

// keepAlive renews s. Its holds' deadlines move with it, so their keys
// change (EvChanged, in key order).
func (t *sessionTable) keepAlive(ctx *applyCtx, s *Session, ttl int64) {
	if ttl != 0 {
		s.TTL = ttl
	}
	s.Deadline = ctx.now + s.TTL
	t.schedule(s.Deadline, dueSession, s.ID)
	if hs := t.sessHolds[s.ID]; len(hs) > 0 {
		refs := sortedRefs(hs)
		for i, r := range refs {
			if i > 0 && refs[i-1].key == r.key {
				continue
			}
			if v := t.keys[r.key]; v != nil {
				t.touch(ctx, r.key, v)
			}
		}
	}
}

// sessionClose handles OpSessionClose.
func (t *sessionTable) sessionClose(ctx *applyCtx, cmd *Command) Result {
	if err := t.cfg.checkSessionID(cmd.Session); err != nil {
		return Result{Err: err}
	}
	s := t.sessions[cmd.Session]
	if s == nil {
		return Result{Err: errf(ErrSessionUnknown, "%q", cmd.Session)}
	}
	t.endSession(ctx, s, ReasonSessionClosed, ErrCancelled)
	return Result{Released: true}
}

// expireSession ends session id once its deadline fell due.
func (t *sessionTable) expireSession(ctx *applyCtx, id string) {
	if s := t.sessions[id]; s != nil && s.Deadline <= ctx.at {
		ctx.dueQuiet++
		t.endSession(ctx, s, ReasonSession, ErrSessionUnknown)
	}
}

// endSession removes s, its waiters (first, so none of them is handed a
// key its own session frees) and its holds, then settles every key
// touched, in a deterministic order.
func (t *sessionTable) endSession(ctx *applyCtx, s *Session, reason Reason, werr error) {
	delete(t.sessions, s.ID)
	t.mem -= sessionBytes(s)
	var keys []string
	seen := make(map[string]bool)
	add := func(k string) {
		if !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	if ws := t.sessWaiters[s.ID]; len(ws) > 0 {
		ids := make([]string, 0, len(ws))
		for id := range ws {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		for _, id := range ids {
			if w := t.locks.waiters[id]; w != nil {
				t.locks.waiterEnded(ctx, w, werr, false)
				for _, k := range w.Keys {
					add(k)
				}
			}
		}
	}
	delete(t.sessWaiters, s.ID)
	if hs := t.sessHolds[s.ID]; len(hs) > 0 {
		for _, r := range sortedRefs(hs) {
			v := t.keys[r.key]
			if v == nil || v.Kind() != KindLock {
				continue
			}
			l := v.lock()
			if i := l.holdIndex(r.owner); i >= 0 && l.holder(i).session() == s.ID {
				t.locks.endHold(ctx, r.key, l, i, reason)
				add(r.key)
			}
		}
	}
	delete(t.sessHolds, s.ID)
	for _, k := range keys {
		t.locks.settle(ctx, k)
	}
}

func sortedRefs(m map[holdRef]struct{}) []holdRef {
	refs := make([]holdRef, 0, len(m))
	for r := range m {
		refs = append(refs, r)
	}
	sort.Slice(refs, func(i, j int) bool {
		if refs[i].key != refs[j].key {
			return refs[i].key < refs[j].key
		}
		return refs[i].owner < refs[j].owner
	})
	return refs
}

func (t *sessionTable) sessAddHold(sess, key, owner string) {
	m := t.sessHolds[sess]
	if m == nil {
		m = make(map[holdRef]struct{})
		t.sessHolds[sess] = m
	}
	if _, ok := m[holdRef{key, owner}]; !ok {
		t.undoSessHold(sess, key, owner, true)
	}
	m[holdRef{key, owner}] = struct{}{}
}

func (t *sessionTable) sessDelHold(sess, key, owner string) {
	if m := t.sessHolds[sess]; m != nil {
		if _, ok := m[holdRef{key, owner}]; ok {
			t.undoSessHold(sess, key, owner, false)
		}
		delete(m, holdRef{key, owner})
		if len(m) == 0 {
			delete(t.sessHolds, sess)
		}
	}
}

func (t *sessionTable) sessAddWaiter(sess, id string) {
	m := t.sessWaiters[sess]
	if m == nil {
		m = make(map[string]struct{})
		t.sessWaiters[sess] = m
	}
	m[id] = struct{}{}
}

func (t *sessionTable) sessDelWaiter(sess, id string) {
	if m := t.sessWaiters[sess]; m != nil {
		delete(m, id)
		if len(m) == 0 {
			delete(t.sessWaiters, sess)
		}
	}
}
