package redisbridge

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/locknode/locknode/redisbridge/resp"
)

// outbox is a connection's queue of pushed messages (pub/sub messages and
// invalidations) and the pusher goroutine that writes them between
// replies. It is one part of a conn: c is the connection it writes to.
// mu guards pushes, pending, softSince and overflow.
type outbox struct {
	c         *conn
	mu        sync.Mutex
	pushes    []push
	pending   int64     // bytes of pushes, plus those of a batch being written
	softSince time.Time // when pending last went over PubSubSoftLimit; zero: not over
	overflow  bool
	wake      chan struct{}
	on        atomic.Bool // the pusher runs
}

// enqueue adds a message for c's pusher. It never blocks (it runs on the
// apply path): a subscriber whose pending output passes the pub/sub
// limits is disconnected instead, and its queue dropped.
func (o *outbox) enqueue(m push) {
	c := o.c
	o.mu.Lock()
	if o.overflow {
		o.mu.Unlock()
		return
	}
	pending := o.pending + m.size()
	if why := o.overLimit(pending); why != "" {
		o.overflow = true
		o.pushes = nil
		o.pending = 0
		o.mu.Unlock()
		c.s.cfg.Logger.Warn("disconnecting slow subscriber", "client_id", c.id, "remote", c.nc.RemoteAddr().String(),
			"pending_bytes", pending, "limit", why)
		c.nc.Close()
		return
	}
	o.pending = pending
	o.pushes = append(o.pushes, m)
	o.mu.Unlock()
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// overLimit reports which pub/sub output limit c passes with pending
// bytes pending ("" if none). Call with mu held.
func (o *outbox) overLimit(pending int64) string {
	c := o.c
	cfg := &c.s.cfg
	switch {
	case len(o.pushes) >= cfg.MaxPendingPushes:
		return "pending messages"
	case cfg.PubSubHardLimit > 0 && pending > cfg.PubSubHardLimit:
		return "hard"
	case cfg.PubSubSoftLimit > 0 && pending > cfg.PubSubSoftLimit:
		now := time.Now()
		if o.softSince.IsZero() {
			o.softSince = now
		} else if now.Sub(o.softSince) > cfg.PubSubSoftFor {
			return "soft"
		}
	default:
		o.softSince = time.Time{}
	}
	return ""
}

// queued returns the queued messages and their bytes (CLIENT
// INFO's oll and omem).
func (o *outbox) queued() (msgs int, bytes int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.pushes), o.pending
}

// drain writes queued messages. Call with wmu held: serve calls it
// before every command so a reply never overtakes a message queued before
// that command ran.
func (o *outbox) drain() {
	c := o.c
	o.mu.Lock()
	ps := o.pushes
	o.pushes = nil
	o.mu.Unlock()
	for i := range ps {
		m := &ps[i]
		if m.kind != pushMessage {
			writeTrackingPush(c.w, m)
		} else if m.pattern != "" {
			c.w.WritePushLen(4)
			c.w.WriteBulkString("pmessage")
			c.w.WriteBulkString(m.pattern)
		} else {
			c.w.WritePushLen(3)
			c.w.WriteBulkString("message")
		}
		if m.kind == pushMessage {
			c.w.WriteBulkString(m.channel)
			c.w.WriteBulkString(m.message)
		}
		// Written (into the fixed buffer, or through to the socket): no
		// longer pending. While a write blocks on a client that does not
		// read, the rest of ps still counts.
		o.mu.Lock()
		if !o.overflow {
			o.pending -= m.size()
		}
		o.mu.Unlock()
	}
}

// start starts c's pusher goroutine once (at its first
// subscription, or when invalidations may come: tracking on, or another
// connection's tracking redirected to c).
func (o *outbox) start() {
	c := o.c
	if !o.on.CompareAndSwap(false, true) {
		return
	}
	// Ends when serve ends (c.done is closed then).
	go func() {
		for {
			select {
			case <-c.done:
				return
			case <-o.wake:
			}
			if c.pipe.busy() {
				continue // the replier writes them after the next reply
			}
			c.wmu.Lock()
			o.drain()
			c.flush()
			c.wmu.Unlock()
		}
	}()
}

// writeTrackingPush writes an invalidation (Redis' sendTrackingMessage).
// Call with wmu held.
func writeTrackingPush(w *resp.Writer, m *push) {
	switch m.kind {
	case pushRedirBroken:
		w.WritePushLen(2)
		w.WriteBulkString("tracking-redir-broken")
		w.WriteInt(m.id)
		return
	case pushInvalidate:
		w.WritePushLen(2)
		w.WriteBulkString("invalidate")
	default:
		w.WritePushLen(3)
		w.WriteBulkString("message")
		w.WriteBulkString(trackingChannel)
	}
	if m.null {
		w.WriteNull()
		return
	}
	w.WriteArrayLen(len(m.keys))
	for _, k := range m.keys {
		w.WriteBulkString(k)
	}
}
