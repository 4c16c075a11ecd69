package raft

// locknode fork: a follower whose log store fails, and a follower whose
// log holds a long run of another term's entries, each cost the leader
// one AppendEntries per entry as it walked nextIndex back (see FORK.md).

// resyncLastLog sets lastLog from the log store after a failed write: a
// suffix deleted before a failed StoreLogs must not stay claimed, or the
// next AppendEntries would be checked against entries the store no longer
// holds (and appended after a gap). Called from the main loop only.
func (r *Raft) resyncLastLog() {
	idx, err := r.logs.LastIndex()
	if err != nil {
		r.logger.Error("failed to read the last log index after a failed write", "error", err)
		return
	}
	var term uint64
	if idx > 0 {
		var l Log
		if err := r.logs.GetLog(idx, &l); err != nil {
			r.logger.Error("failed to read the last log entry after a failed write", "index", idx, "error", err)
			return
		}
		term = l.Term
	}
	if last, _ := r.getLastLog(); last != idx {
		r.logger.Warn("log store holds fewer entries after a failed write", "claimed", last, "stored", idx)
		r.setLastLog(idx, term)
	}
}

// conflictHint returns the LastLog a follower answers when the entry it
// holds at prev has term, not the leader's: the index before the first
// entry of that term in its log (terms never decrease along a log, so a
// binary search finds it), but never below what is known to match the
// leader's log (the commit index, the last snapshot): entries up to there
// are committed, and one of them is where the leader's next AppendEntries
// is checked, so the follower must be able to read it (or it is the
// snapshot's last entry, whose term the follower knows). The leader's
// next AppendEntries then starts there, skipping the whole run of that
// term in one round trip instead of one entry per round trip. Starting
// too early is safe (the follower skips entries it already has); on a read
// error the answer is prev-1, which moves the leader back one entry as
// upstream does.
func (r *Raft) conflictHint(prev, term uint64) uint64 {
	first, err := r.logs.FirstIndex()
	if err != nil || first == 0 {
		return prev - 1
	}
	snapIdx, _ := r.getLastSnapshot()
	known := max(r.getCommitIndex(), snapIdx)
	lo, hi := max(first, known+1), prev // the first entry of term is in [lo, hi]
	if lo > hi {
		return prev - 1
	}
	for lo < hi {
		mid := lo + (hi-lo)/2
		var l Log
		if err := r.logs.GetLog(mid, &l); err != nil {
			return prev - 1
		}
		if l.Term < term {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo - 1
}
