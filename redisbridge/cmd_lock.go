package redisbridge

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/auth"
	"github.com/locknode/locknode/redisbridge/resp"
)

// Native lock commands: the typed lock API (api.Locker) over RESP, so a
// Redis client can get what SET NX cannot give it: fencing tokens, FIFO
// waiting without polling, shared and semaphore modes, reentrancy and
// sessions.
//
//	LOCK.ACQUIRE key owner ttl_ms [WAIT ms] [MODE exclusive|shared|semaphore]
//	             [PERMITS n] [REENTRANT] [SESSION id] [ID reqid]
//	             [LOCKDELAY ms] [MAXHOLD ms] [META name value]...
//	    -> [fence, deadline_ms]   (RESP3: map fence, deadline_ms)
//	LOCK.RELEASE key owner [REENTRANT] [FORCE] [ID reqid]
//	    -> 1 the hold ended, 0 it did not (not held, or a reentrant count remains)
//	LOCK.EXTEND key owner ttl_ms [ID reqid] -> like LOCK.ACQUIRE
//	LOCK.INFO key -> map (RESP2: flat array of pairs), or null; each
//	    holder's and waiter's metadata is a map of its own, grant,
//	    extend and queue times are cluster ms (granted_ms, extended_ms,
//	    queued_ms)
//	FENCE.CHECK resource token -> [1|0, highest]

// parseInt parses an integer argument into int64, refusing anything
// that is not one or does not fit (Redis' "value is not an integer or out
// of range"). Range checks are the request's Validate.
func parseInt(b []byte) (int64, bool) {
	n, err := strconv.ParseInt(string(b), 10, 64)
	return n, err == nil
}

// parseLockAcquire parses LOCK.ACQUIRE's arguments, or returns the error
// reply's text.
func parseLockAcquire(args [][]byte) (api.AcquireRequest, string) {
	ttl, ok := parseInt(args[3])
	if !ok {
		return api.AcquireRequest{}, msgNotInt
	}
	req := api.AcquireRequest{Key: string(args[1]), Owner: string(args[2]), TTLMs: ttl}
	for i := 4; i < len(args); i++ {
		opt := strings.ToUpper(string(args[i]))
		if opt == "REENTRANT" {
			req.Reentrant = true
			continue
		}
		if i+1 >= len(args) {
			return req, msgSyntax
		}
		val := args[i+1]
		i++
		var n int64
		switch opt {
		case "WAIT", "PERMITS", "LOCKDELAY", "MAXHOLD":
			if n, ok = parseInt(val); !ok {
				return req, msgNotInt
			}
		}
		switch opt {
		case "WAIT":
			req.WaitMs = n
		case "PERMITS":
			if int64(int(n)) != n {
				return req, msgNotInt
			}
			req.Permits = int(n)
		case "LOCKDELAY":
			req.LockDelay = n
		case "MAXHOLD":
			req.MaxHoldMs = n
		case "MODE":
			req.Mode = strings.ToLower(string(val))
		case "SESSION":
			req.Session = string(val)
		case "ID":
			req.RequestID = string(val)
		case "META":
			// META name value, repeatable; a name given again takes the
			// later value, as HSET does. Validate bounds the count.
			if i+1 >= len(args) {
				return req, msgSyntax
			}
			if req.Meta == nil {
				req.Meta = make(map[string]string)
			}
			req.Meta[string(val)] = string(args[i+1])
			i++
		default:
			return req, msgSyntax
		}
	}
	return req, ""
}

func cmdLockAcquire(c *conn, args [][]byte) {
	req, msg := parseLockAcquire(args)
	if msg != "" {
		c.w.WriteError(msg)
		return
	}
	// Before any use of the numbers: a wait past the limit would overflow
	// the context's timeout below.
	if err := req.Validate(c.s.lim); err != nil {
		c.writeErr(err)
		return
	}
	var lease api.Lease
	var err error
	// The request is the client's: the node adds no metadata of its own.
	if req.WaitMs > 0 {
		// Blocks in the FSM's FIFO queue (no polling) until granted, the
		// wait ends, or Close cancels it.
		ctx, cancel := context.WithTimeout(c.s.baseCtx, time.Duration(req.WaitMs)*time.Millisecond+c.s.cfg.RequestTimeout)
		stop := c.watchHangup(cancel)
		lease, err = c.s.b.Acquire(api.WithoutDefaultMeta(c.withSpan(ctx)), req)
		stop()
		cancel()
	} else {
		ctx, cancel := c.ctx()
		lease, err = c.s.b.TryAcquire(api.WithoutDefaultMeta(ctx), req)
		cancel()
	}
	if err != nil {
		c.writeErr(err)
		return
	}
	writeLease(c.w, lease)
}

func writeLease(w *resp.Writer, l api.Lease) {
	if w.Proto >= 3 {
		w.WriteMapLen(2)
		w.WriteBulkString("fence")
		w.WriteInt(int64(l.Fence))
		w.WriteBulkString("deadline_ms")
		w.WriteInt(l.Deadline)
		return
	}
	w.WriteArrayLen(2)
	w.WriteInt(int64(l.Fence))
	w.WriteInt(l.Deadline)
}

func cmdLockRelease(c *conn, args [][]byte) {
	req := api.ReleaseRequest{Key: string(args[1]), Owner: string(args[2])}
	for i := 3; i < len(args); i++ {
		switch strings.ToUpper(string(args[i])) {
		case "REENTRANT":
			req.Reentrant = true
		case "FORCE":
			req.Force = true
		case "ID":
			if i+1 >= len(args) {
				c.w.WriteError(msgSyntax)
				return
			}
			req.RequestID = string(args[i+1])
			i++
		default:
			c.w.WriteError(msgSyntax)
			return
		}
	}
	if err := req.Validate(c.s.lim); err != nil {
		c.writeErr(err)
		return
	}
	ctx, cancel := c.ctx()
	res, err := c.s.b.Release(ctx, req)
	cancel()
	if req.Force && err == nil {
		c.s.cfg.Audit.Event(auth.EventForceRelease, c.acl.user, c.nc.RemoteAddr().String(), "key", req.Key, "released", res.Released)
	}
	switch {
	case errors.Is(err, api.ErrNotHeld), errors.Is(err, api.ErrNotFound):
		c.w.WriteInt(0)
	case err != nil:
		c.writeErr(err)
	case res.Released:
		c.w.WriteInt(1)
	default:
		c.w.WriteInt(0)
	}
}

func cmdLockExtend(c *conn, args [][]byte) {
	ttl, ok := parseInt(args[3])
	if !ok {
		c.w.WriteError(msgNotInt)
		return
	}
	req := api.ExtendRequest{Key: string(args[1]), Owner: string(args[2]), TTLMs: ttl}
	for i := 4; i < len(args); i++ {
		if strings.ToUpper(string(args[i])) != "ID" || i+1 >= len(args) {
			c.w.WriteError(msgSyntax)
			return
		}
		req.RequestID = string(args[i+1])
		i++
	}
	if err := req.Validate(c.s.lim); err != nil {
		c.writeErr(err)
		return
	}
	ctx, cancel := c.ctx()
	lease, err := c.s.b.Extend(ctx, req)
	cancel()
	if err != nil {
		c.writeErr(err)
		return
	}
	writeLease(c.w, lease)
}

// LOCK.INFO key: holders, fence, TTL and waiters, linearizable.
func cmdLockInfo(c *conn, args [][]byte) {
	if err := c.s.lim.CheckKey(string(args[1])); err != nil {
		c.writeErr(err)
		return
	}
	ctx, cancel := c.ctx()
	info, err := c.s.b.Inspect(ctx, string(args[1]), api.ReadOptions{})
	cancel()
	if errors.Is(err, api.ErrNotFound) {
		c.w.WriteNull()
		return
	}
	if err != nil {
		c.writeErr(err)
		return
	}
	w := c.w
	w.WriteMapLen(7)
	w.WriteBulkString("key")
	w.WriteBulkString(info.Key)
	w.WriteBulkString("kind")
	w.WriteBulkString(info.Kind)
	w.WriteBulkString("fence")
	w.WriteInt(int64(info.Fence))
	w.WriteBulkString("permits")
	w.WriteInt(int64(info.Permits))
	w.WriteBulkString("ttl_ms")
	w.WriteInt(info.TTLMs)
	w.WriteBulkString("holders")
	w.WriteArrayLen(len(info.Holders))
	for _, h := range info.Holders {
		w.WriteMapLen(9)
		w.WriteBulkString("owner")
		w.WriteBulkString(h.Owner)
		w.WriteBulkString("mode")
		w.WriteBulkString(h.Mode)
		w.WriteBulkString("count")
		w.WriteInt(int64(h.Count))
		w.WriteBulkString("fence")
		w.WriteInt(int64(h.Fence))
		w.WriteBulkString("ttl_ms")
		w.WriteInt(h.TTLMs)
		w.WriteBulkString("session")
		w.WriteBulkString(h.Session)
		w.WriteBulkString("granted_ms")
		w.WriteInt(h.GrantedMs)
		w.WriteBulkString("extended_ms")
		w.WriteInt(h.ExtendedMs)
		w.WriteBulkString("meta")
		writeMeta(c.w, h.Meta)
	}
	w.WriteBulkString("waiters")
	w.WriteArrayLen(len(info.Waiters))
	for _, wt := range info.Waiters {
		w.WriteMapLen(6)
		w.WriteBulkString("id")
		w.WriteBulkString(wt.ID)
		w.WriteBulkString("owner")
		w.WriteBulkString(wt.Owner)
		w.WriteBulkString("mode")
		w.WriteBulkString(wt.Mode)
		w.WriteBulkString("wait_ms")
		w.WriteInt(wt.WaitMs)
		w.WriteBulkString("queued_ms")
		w.WriteInt(wt.QueuedMs)
		w.WriteBulkString("meta")
		writeMeta(c.w, wt.Meta)
	}
}

// writeMeta writes metadata as a map (RESP2: flat name, value pairs) in
// name order, so a reply is the same on every node.
func writeMeta(w *resp.Writer, m map[string]string) {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	slices.Sort(names)
	w.WriteMapLen(len(names))
	for _, k := range names {
		w.WriteBulkString(k)
		w.WriteBulkString(m[k])
	}
}

// FENCE.CHECK resource token -> [1|0, highest]: CheckAndAdvance. A token
// above the highest fence the cluster granted is refused (ERR bad request).
func cmdFenceCheck(c *conn, args [][]byte) {
	token, err := strconv.ParseUint(string(args[2]), 10, 64)
	if err != nil {
		c.w.WriteError(msgNotInt)
		return
	}
	freq := api.FenceCheckRequest{Resource: string(args[1]), Token: token}
	if err := freq.Validate(c.s.lim); err != nil {
		c.writeErr(err)
		return
	}
	ctx, cancel := c.ctx()
	res, err := c.s.b.FenceCheck(ctx, string(args[1]), token)
	cancel()
	if err != nil {
		c.writeErr(err)
		return
	}
	c.w.WriteArrayLen(2)
	if res.OK {
		c.w.WriteInt(1)
	} else {
		c.w.WriteInt(0)
	}
	c.w.WriteInt(int64(res.Highest))
}
