package redisbridge

import (
	"fmt"

	"github.com/locknode/locknode/fsm"
	"github.com/locknode/locknode/redisbridge/resp"
)

// txState is a connection's WATCH list and MULTI queue.
type txState struct {
	active  bool
	aborted bool       // a queued command was refused: EXEC replies EXECABORT
	queue   [][][]byte // owned copies
	bytes   int        // argument bytes in queue
	watch   []fsm.WatchKey
	tooBig  bool // the block went past fsm.Config's MULTI limits
	// slot is the hash slot of the keys queued so far (-1: none yet);
	// crossSlot: queued commands name keys of different slots, which
	// EXEC refuses in cluster mode (Config.Cluster), as Redis Cluster.
	slot      int
	crossSlot bool
}

func (t *txState) abort() {
	if t.active {
		t.aborted = true
	}
}

func (t *txState) reset() {
	t.active, t.aborted, t.queue, t.bytes, t.tooBig = false, false, nil, 0, false
	t.slot, t.crossSlot = -1, false
}

func (t *txState) unwatch() { t.watch = nil }

// enqueue adds a command to the MULTI block, or refuses it (and marks the
// transaction aborted, as Redis does for errors found while queueing).
// slot is the hash slot of the command's keys (-1: none or not in
// cluster mode).
func (t *txState) enqueue(s *Server, w *resp.Writer, cmd *command, name string, args [][]byte, slot int) {
	if cmd.flags&flagQueue == 0 {
		t.abort()
		w.WriteError("ERR locknode: '" + name + "' is not allowed inside MULTI")
		return
	}
	n := 0
	for _, a := range args {
		n += len(a)
	}
	lim := s.limits
	if t.tooBig || len(t.queue) >= lim.MaxExecCommands || t.bytes+n > lim.MaxExecBytes {
		// Refused like any error while queueing (EXEC then answers
		// EXECABORT); the queue is dropped at once, as it can never run.
		t.abort()
		t.tooBig, t.queue, t.bytes = true, nil, 0
		w.WriteError(fmt.Sprintf(msgMultiTooBig, lim.MaxExecCommands, lim.MaxExecBytes))
		return
	}
	t.bytes += n
	if slot < 0 && s.cfg.Cluster && len(args) > 1 {
		// One key at most (crossSlot looks only at commands that may
		// name several).
		slot, _ = sameSlot(cmd.spec.KeyArgs(args))
	}
	if slot >= 0 {
		if t.slot >= 0 && t.slot != slot {
			t.crossSlot = true
		}
		t.slot = slot
	}
	t.queue = append(t.queue, resp.CloneArgs(args))
	w.WriteStatus("QUEUED")
}

// WATCH key [key ...]: records each key's version in one linearizable
// read; EXEC carries them and the FSM fails the transaction (null array)
// when any changed.
func cmdWatch(c *conn, args [][]byte) {
	if c.tx.active {
		c.w.WriteError(msgWatchInMulti)
		return
	}
	keys := make([]string, 0, len(args)-1)
	for _, k := range args[1:] {
		if !c.tx.watching(string(k)) {
			keys = append(keys, string(k))
		}
	}
	versions := make([]uint64, len(keys))
	if !c.read(func(t *fsm.Table, now int64) {
		for i, k := range keys {
			versions[i] = t.KeyVersion(k, now)
		}
	}) {
		return
	}
	for i, k := range keys {
		c.tx.watch = append(c.tx.watch, fsm.WatchKey{Key: k, Version: versions[i]})
	}
	c.w.WriteStatus("OK")
}

func (t *txState) watching(key string) bool {
	for _, w := range t.watch {
		if w.Key == key {
			return true
		}
	}
	return false
}

func cmdUnwatch(c *conn, _ [][]byte) {
	c.tx.unwatch()
	c.w.WriteStatus("OK")
}

func cmdMulti(c *conn, _ [][]byte) {
	if c.tx.active {
		c.w.WriteError(msgMultiNested)
		return
	}
	c.tx.active, c.tx.slot = true, -1
	c.w.WriteStatus("OK")
}

// EXEC: the whole block and the watch list as ONE OpExec entry.
func cmdExec(c *conn, _ [][]byte) {
	if !c.tx.active {
		c.w.WriteError(msgExecNoMulti)
		return
	}
	aborted, queue, watch, cross := c.tx.aborted, c.tx.queue, c.tx.watch, c.tx.crossSlot
	c.tx.reset()
	c.tx.unwatch()
	if aborted {
		c.w.WriteError(msgExecAbort)
		return
	}
	if cross {
		c.w.WriteError(msgCrossSlot)
		return
	}
	if r, ok := c.apply(&fsm.Command{Op: fsm.OpExec, Multi: queue, Watch: watch}); ok {
		c.w.WriteReply(r.Reply)
	}
}

func cmdDiscard(c *conn, _ [][]byte) {
	if !c.tx.active {
		c.w.WriteError(msgDiscardNoMult)
		return
	}
	c.tx.reset()
	c.tx.unwatch()
	c.w.WriteStatus("OK")
}
