package fsm

import (
	"errors"
	"math"
)

// ErrBadRebase: Rebase was asked to move the clock backwards or past the
// range of FSM times.
var ErrBadRebase = errors.New("fsm: rebase: the shift must be >= 0 and keep every time in range")

// Rebase moves every absolute time in the table forward by d ms: the
// clock and every deadline, grant, renewal, queue and expiry time of
// holds, lock-delays, Redis values, waiters, sessions, remembered request
// ids and release tombstones. Every remaining time (a deadline minus now)
// and every order between times stay exactly as they were, so what the
// table decides from here on is what it would have decided at its old
// clock, d ms later by the new one.
//
// Rebase is not a command: no replica ever applies it. It prepares a
// table for a new cluster before that cluster's first entry (`locknode
// snapshot restore` re-bases a backup so that the restored clock follows
// wall time), and every node of that cluster must start from the same
// re-based snapshot. Zero times stay zero: they mean "none" or "not
// known" (a value without a deadline, a hold never renewed).
func (t *Table) Rebase(d int64) error {
	if d < 0 || t.now > math.MaxInt64/2-d {
		return ErrBadRebase
	}
	if d == 0 {
		return nil
	}
	sh := func(v *int64) {
		if *v != 0 {
			*v += d
		}
	}
	t.now += d
	for _, v := range t.keys {
		sh(&v.holdDue)
		if v.valueData != nil {
			sh(&v.valueData.expireAt)
			if x := v.valueData.lockRare; x != nil {
				sh(&x.delayUntil)
			}
		}
		if v.Kind() != KindLock {
			continue
		}
		l := v.lock()
		for j := 0; j < l.numHolders(); j++ {
			h := l.holder(j)
			sh(&h.Deadline)
			sh(&h.Granted)
			sh(&h.Extended)
			if h.opt != nil && h.opt.hardLimit != 0 {
				// A copy: the options may be shared with another hold.
				o := *h.opt
				o.hardLimit += d
				h.opt = &o
			}
		}
	}
	for _, w := range t.waiters {
		sh(&w.Deadline)
		sh(&w.Queued)
	}
	for _, s := range t.sessions {
		sh(&s.Deadline)
	}
	for i := t.reqs.head; i < len(t.reqs.fifo); i++ {
		sh(&t.reqs.fifo[i].expires)
		sh(&t.reqs.fifo[i].deadline)
	}
	sh(&t.reqs.due)
	for k, tb := range t.tombs {
		recent := make([]tombEntry, len(tb.recent))
		for i, e := range tb.recent {
			sh(&e.until)
			recent[i] = e
		}
		tb.recent = recent
		sh(&tb.due)
		t.tombs[k] = tb
	}
	for k, at := range t.goneHoldDue {
		if at != 0 {
			t.goneHoldDue[k] = at + d
		}
	}
	// A uniform shift keeps every heap ordered.
	for i := range t.due {
		for j := range t.due[i] {
			t.due[i][j].at += d
		}
	}
	return nil
}
