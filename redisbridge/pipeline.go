package redisbridge

import (
	"bytes"

	"github.com/locknode/locknode/fsm"
	"github.com/locknode/locknode/redisbridge/resp"
)

// Pipelined writes group-commit. When a connection has sent more than one
// command (a pipeline), each write that is a single log entry and needs
// no read first (a Redis write command of the FSM, EVAL, EVALSHA and
// their _RO forms) is proposed without waiting for its commit, so a
// pipeline's writes share log writes and replication rounds. A replier
// goroutine writes their replies in order as they complete. Every other
// command first waits until all replies before it are written
// (drainPipe), then runs as it always did: a read sees every write sent
// before it on the connection, and MULTI/EXEC, WATCH, pub/sub, blocking
// commands and errors keep their order and meaning.

// maxPipelined bounds the writes one connection has in flight; the next
// one waits for the oldest reply.
const maxPipelined = 1024

// pipeline is a connection's in-flight writes, oldest first.
type pipeline struct {
	items  []fsm.Future
	head   int  // items[head:] are in flight
	closed bool // serve ended: the replier stops once items are done
	on     bool // the replier runs
	ended  chan struct{}
}

func (p *pipeline) len() int { return len(p.items) - p.head }

// proposeAsync proposes args without waiting when the connection is
// pipelining and the command can group-commit; it reports whether it did
// (the replier then writes the reply). Call from serve, without wmu.
func (c *conn) proposeAsync(args [][]byte) bool {
	ab := c.s.async
	if ab == nil || !c.authed || c.tx.active {
		return false
	}
	c.pipeMu.Lock()
	inFlight := c.pipe.len()
	c.pipeMu.Unlock()
	if inFlight == 0 && c.rd.Buffered() == 0 {
		return false // a lone command: waiting in place costs less
	}
	cmd := c.asyncCommand(args)
	if cmd == nil {
		return false
	}
	if c.s.users != nil {
		name := c.lowerName(args[0])
		tc := c.s.commands[name]
		if tc == nil {
			tc = dataCommand
		}
		if c.permission(tc, name, args) != "" {
			return false // dispatch refuses it, in order
		}
	}
	if tc := c.s.commands[c.lowerName(args[0])]; c.electionRefusal(orData(tc), c.lowerName(args[0]), args) != "" {
		return false // dispatch refuses it, in order
	}
	if tc := c.s.commands[c.lowerName(args[0])]; c.s.cfg.Cluster {
		if _, msg := c.crossSlot(orData(tc), c.lowerName(args[0]), args); msg != "" || c.moved(orData(tc), c.lowerName(args[0]), args) != "" {
			return false // dispatch refuses it, in order
		}
	}
	if c.w.Proto < 3 && c.s.hub.isSubscribed(c) {
		return false // refused in subscribe mode: dispatch says so
	}
	c.pipeMu.Lock()
	for c.pipe.len() >= maxPipelined {
		c.pipeCond.Wait()
	}
	c.pipeMu.Unlock()
	cmd.NoForce, cmd.KeysOnly = c.noForce(), c.keysOnly()
	ctx, cancel := c.ctx()
	c.s.stats.command(c.lowerName(args[0]))
	counted := c.writeStarted()
	reg := c.trackBegin(cmd)
	f := ab.ApplyAsync(ctx, cmd)
	if reg != nil || counted {
		f = trackedFuture{f, reg, counted}
	}
	cancel() // bounds only a synchronous fallback inside ApplyAsync
	c.pipeMu.Lock()
	c.pipe.items = append(c.pipe.items, f)
	if !c.pipe.on {
		c.pipe.on = true
		c.pipe.ended = make(chan struct{})
		// Ends when serve has ended (pipe.closed) and every reply is
		// written; serve waits for it.
		go c.replier()
	}
	c.pipeCond.Broadcast()
	c.pipeMu.Unlock()
	return true
}

// asyncCommand returns the log entry of a command that can group-commit,
// or nil: then dispatch runs it (and writes any error).
func (c *conn) asyncCommand(args [][]byte) *fsm.Command {
	name := c.lowerName(args[0])
	switch name {
	case "eval", "eval_ro", "evalsha", "evalsha_ro":
		if len(args) < 3 {
			return nil
		}
		keys, argv, msg := parseScriptArgs(args)
		if msg != "" {
			return nil
		}
		ro := name == "eval_ro" || name == "evalsha_ro"
		if name == "eval" || name == "eval_ro" {
			return evalCommand(bytes.Clone(args[1]), keys, argv, ro)
		}
		if len(args[1]) != 40 {
			return nil // dispatch answers NOSCRIPT
		}
		return evalSHACommand(args[1], keys, argv, ro)
	}
	if c.s.commands[name] != nil || !fsm.IsKnownCommand(args[0]) || fsm.IsReadOnly(args[0]) || !c.s.arity.ok(name, args) {
		return nil
	}
	return &fsm.Command{Op: fsm.OpRedis, Args: resp.CloneArgs(args)}
}

// replier writes the replies of pipelined writes in order as they
// complete, flushing whenever the next one is not ready.
func (c *conn) replier() {
	defer close(c.pipe.ended)
	for {
		c.pipeMu.Lock()
		for c.pipe.len() == 0 && !c.pipe.closed {
			c.pipeCond.Wait()
		}
		if c.pipe.len() == 0 {
			c.pipeMu.Unlock()
			return
		}
		f := c.pipe.items[c.pipe.head]
		c.pipeMu.Unlock()

		select {
		case <-f.Done():
		default:
			c.wmu.Lock()
			c.flush()
			c.wmu.Unlock()
		}
		r, err := f.Result()
		if tf, ok := f.(trackedFuture); ok {
			if tf.counted {
				c.writeDone(r.Index)
			}
			c.s.trk.end(tf.reg, r.Index)
		}

		c.wmu.Lock()
		c.writeResult(r, err)
		c.pipeMu.Lock()
		c.pipe.items[c.pipe.head] = nil
		c.pipe.head++
		empty := c.pipe.len() == 0
		if empty {
			c.pipe.items, c.pipe.head = c.pipe.items[:0], 0
		}
		c.pipeCond.Broadcast()
		c.pipeMu.Unlock()
		// Messages queued meanwhile follow this reply (the pusher leaves
		// them while replies are in flight): an invalidation the write
		// caused comes after its reply, as Redis sends it.
		c.drainPushes()
		if empty {
			c.flush()
		}
		c.wmu.Unlock()
	}
}

// drainPipe waits until every pipelined write has replied (into the
// write buffer), so what serve writes next comes after. Call without wmu.
func (c *conn) drainPipe() {
	c.pipeMu.Lock()
	for c.pipe.len() > 0 {
		c.pipeCond.Wait()
	}
	c.pipeMu.Unlock()
}

// pipelining reports writes in flight.
func (c *conn) pipelining() bool {
	c.pipeMu.Lock()
	defer c.pipeMu.Unlock()
	return c.pipe.len() > 0
}

// endPipe is serve's last word: it waits for every reply and for the
// replier to end.
func (c *conn) endPipe() {
	c.pipeMu.Lock()
	c.pipe.closed = true
	on := c.pipe.on
	c.pipeCond.Broadcast()
	c.pipeMu.Unlock()
	if on {
		<-c.pipe.ended
	}
}
