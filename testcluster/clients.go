package testcluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/client"
)

// Grant is a granted or extended hold as a client saw it.
type Grant struct {
	Fence    uint64    // 0 when the protocol does not report it (SET NX)
	Deadline int64     // FSM ms; 0 when not reported
	Sent     time.Time // real time the request that won it was sent
}

// Client is one test client: it runs lock operations through one path
// into the cluster (embedded node, HTTP or RESP) and records each in a
// History. Use one Client per goroutine.
type Client struct {
	h   *History
	id  int
	via string
	b   backend
}

// backend is one protocol's lock operations; errors are classified by
// classify.
type backend interface {
	acquire(ctx context.Context, key, owner string, ttl, wait time.Duration, try bool) (Grant, error)
	release(ctx context.Context, key, owner string) (bool, error)
	extend(ctx context.Context, key, owner string, ttl time.Duration) (Grant, error)
	get(ctx context.Context, key string) (holder string, fence uint64, deadline, at int64, err error)
}

// NewClient records operations on any api.Locker (an embedded node, a
// client.Client, or a user's own implementation) into h as client id.
func NewClient(h *History, id int, via string, l api.Locker) *Client {
	return &Client{h: h, id: id, via: via, b: lockerBackend{l}}
}

// NativeClient is a client of node i's embedded api.Locker.
func (c *Cluster) NativeClient(h *History, id, node int) *Client {
	return NewClient(h, id, "native "+nodeID(node), c.Locker(node))
}

// HTTPClient is a client.Client over every node's HTTP API (with its
// fail-over and exactly-once retries).
func (c *Cluster) HTTPClient(h *History, id int) *Client {
	cl, err := client.New(client.Config{Endpoints: c.Endpoints(), RequestTimeout: 5 * time.Second, HTTPClient: c.httpClient(),
		Retry: client.RetryPolicy{MaxAttempts: 6, BaseDelay: 20 * time.Millisecond, MaxDelay: 200 * time.Millisecond}})
	if err != nil {
		c.t.Fatalf("testcluster: http client: %v", err)
	}
	return NewClient(h, id, "http", cl)
}

// RESPClient is a go-redis client of node i's RESP bridge. With setNX it
// acquires with SET NX PX and releases with compare-and-delete, as
// Redis lock libraries do (no fence reported); otherwise it uses
// LOCK.ACQUIRE / LOCK.RELEASE / LOCK.EXTEND. It never retries: a retry
// would hide which attempt took effect.
func (c *Cluster) RESPClient(h *History, id, node int, setNX bool) *Client {
	var dial func(ctx context.Context, network, addr string) (net.Conn, error)
	if _, tcp := c.opts.Network.(tcpNetwork); !tcp {
		nw := c.opts.Network
		dial = func(ctx context.Context, _, addr string) (net.Conn, error) { return nw.Dial(ctx, addr) }
	}
	return newRESPClient(h, id, c.RESPAddr(node), setNX, dial)
}

// NewRESPClient is RESPClient for any address.
func NewRESPClient(h *History, id int, addr string, setNX bool) *Client {
	return newRESPClient(h, id, addr, setNX, nil)
}

// newRESPClient is NewRESPClient dialing with dial (nil: TCP).
func newRESPClient(h *History, id int, addr string, setNX bool, dial func(ctx context.Context, network, addr string) (net.Conn, error)) *Client {
	rc := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, MaxRetries: -1, DialTimeout: 2 * time.Second,
		ReadTimeout: 5 * time.Second, WriteTimeout: 2 * time.Second, PoolSize: 2, Dialer: dial})
	via := "resp " + addr
	if setNX {
		via += " setnx"
	}
	return &Client{h: h, id: id, via: via, b: respBackend{rc: rc, setNX: setNX}}
}

// Close releases the client's connections (RESP).
func (cl *Client) Close() error {
	if r, ok := cl.b.(respBackend); ok {
		return r.rc.Close()
	}
	return nil
}

// NewOwner returns a unique owner token.
func NewOwner() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func (cl *Client) record(op Op, err error) Op {
	op.Client, op.Via = cl.id, cl.via
	op.Return = cl.h.Now()
	op.Outcome, op.Reason = classify(err)
	if err != nil {
		op.Err = err.Error()
	}
	cl.h.Add(op)
	return op
}

// Acquire waits up to wait for key (TryAcquire when wait is 0).
func (cl *Client) Acquire(ctx context.Context, key, owner string, ttl, wait time.Duration) (Grant, error) {
	kind := OpAcquire
	if wait <= 0 {
		kind = OpTryAcquire
	}
	op := Op{Kind: kind, Key: key, Owner: owner, TTL: ttl, Call: cl.h.Now()}
	g, err := cl.b.acquire(ctx, key, owner, ttl, wait, wait <= 0)
	if isDown(err) {
		return g, err // never left the test: not an operation
	}
	op.Fence, op.Deadline = g.Fence, g.Deadline
	cl.record(op, err)
	return g, err
}

// TryAcquire takes key if it is free now.
func (cl *Client) TryAcquire(ctx context.Context, key, owner string, ttl time.Duration) (Grant, error) {
	return cl.Acquire(ctx, key, owner, ttl, 0)
}

// Release ends owner's hold of key; true if the hold ended.
func (cl *Client) Release(ctx context.Context, key, owner string) (bool, error) {
	op := Op{Kind: OpRelease, Key: key, Owner: owner, Call: cl.h.Now()}
	ok, err := cl.b.release(ctx, key, owner)
	if isDown(err) {
		return ok, err
	}
	if err == nil && !ok {
		err = fmt.Errorf("%w: release answered 0", api.ErrNotHeld)
	}
	op.Released = ok
	cl.record(op, err)
	return ok, err
}

// Extend renews owner's lease on key to ttl from now.
func (cl *Client) Extend(ctx context.Context, key, owner string, ttl time.Duration) (Grant, error) {
	op := Op{Kind: OpExtend, Key: key, Owner: owner, TTL: ttl, Call: cl.h.Now()}
	g, err := cl.b.extend(ctx, key, owner, ttl)
	if isDown(err) {
		return g, err
	}
	op.Fence, op.Deadline = g.Fence, g.Deadline
	cl.record(op, err)
	return g, err
}

// Get reads key's exclusive holder ("" when free).
func (cl *Client) Get(ctx context.Context, key string) (string, error) {
	op := Op{Kind: OpGet, Key: key, Call: cl.h.Now()}
	holder, fence, deadline, at, err := cl.b.get(ctx, key)
	if isDown(err) {
		return holder, err
	}
	op.Holder, op.Fence, op.Deadline, op.ReadTime = holder, fence, deadline, at
	cl.record(op, err)
	return holder, err
}

// classify maps an error to an outcome; only the FSM's definite
// refusals are Refused — everything else may have taken effect.
func classify(err error) (Outcome, string) {
	switch {
	case err == nil:
		return OK, ""
	case errors.Is(err, api.ErrLocked):
		return Refused, ReasonLocked
	case errors.Is(err, api.ErrNotHeld), errors.Is(err, api.ErrNotOwner), errors.Is(err, api.ErrNotFound):
		return Refused, ReasonNotHeld
	case errors.Is(err, api.ErrWaitTimeout):
		return Refused, ReasonWaitTimeout
	}
	return Unknown, ""
}

// ---- api.Locker ----

type lockerBackend struct{ l api.Locker }

func (b lockerBackend) acquire(ctx context.Context, key, owner string, ttl, wait time.Duration, try bool) (Grant, error) {
	req := api.AcquireRequest{Key: key, Owner: owner, TTLMs: ttl.Milliseconds(), RequestID: "tc-" + NewOwner()}
	sent := time.Now()
	var l api.Lease
	var err error
	if try {
		l, err = b.l.TryAcquire(ctx, req)
	} else {
		req.WaitMs = max(wait.Milliseconds(), 1)
		l, err = b.l.Acquire(ctx, req)
	}
	return Grant{Fence: l.Fence, Deadline: l.Deadline, Sent: sent}, err
}

func (b lockerBackend) release(ctx context.Context, key, owner string) (bool, error) {
	r, err := b.l.Release(ctx, api.ReleaseRequest{Key: key, Owner: owner, RequestID: "tc-" + NewOwner()})
	return r.Released, err
}

func (b lockerBackend) extend(ctx context.Context, key, owner string, ttl time.Duration) (Grant, error) {
	sent := time.Now()
	l, err := b.l.Extend(ctx, api.ExtendRequest{Key: key, Owner: owner, TTLMs: ttl.Milliseconds(), RequestID: "tc-" + NewOwner()})
	return Grant{Fence: l.Fence, Deadline: l.Deadline, Sent: sent}, err
}

func (b lockerBackend) get(ctx context.Context, key string) (string, uint64, int64, int64, error) {
	info, err := b.l.Inspect(ctx, key, api.ReadOptions{})
	if errors.Is(err, api.ErrNotFound) {
		return "", 0, 0, 0, nil
	}
	if err != nil {
		return "", 0, 0, 0, err
	}
	for _, h := range info.Holders {
		if h.Mode == api.ModeExclusive || h.Mode == "" {
			at := int64(0)
			if h.TTLMs > 0 && h.Deadline > 0 {
				at = h.Deadline - h.TTLMs
			}
			return h.Owner, h.Fence, h.Deadline, at, nil
		}
	}
	return "", 0, 0, 0, nil
}

// ---- RESP ----

type respBackend struct {
	rc      *redis.Client
	setNX   bool
	scripts bool // ScriptClient: SET NX polling, EVALSHA release and renew
}

const casDelete = `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`

// respErr maps the bridge's error prefixes to the api sentinels.
func respErr(err error) error {
	if err == nil || errors.Is(err, redis.Nil) {
		return err
	}
	s := err.Error()
	for _, m := range []struct {
		prefix string
		err    error
	}{
		{"LOCKED", api.ErrLocked}, {"NOTOWNER", api.ErrNotOwner}, {"NOTHELD", api.ErrNotHeld},
		{"NOTFOUND", api.ErrNotFound}, {"TIMEOUT", api.ErrWaitTimeout},
	} {
		if strings.HasPrefix(s, m.prefix) {
			return fmt.Errorf("%w: %s", m.err, s)
		}
	}
	return err
}

func (b respBackend) acquire(ctx context.Context, key, owner string, ttl, wait time.Duration, try bool) (Grant, error) {
	if b.scripts {
		return b.scriptAcquire(ctx, key, owner, ttl, wait, try)
	}
	sent := time.Now()
	if b.setNX && try {
		ok, err := b.rc.SetNX(ctx, key, owner, ttl).Result()
		if err != nil {
			return Grant{}, respErr(err)
		}
		if !ok {
			return Grant{}, fmt.Errorf("%w: SET NX answered nil", api.ErrLocked)
		}
		return Grant{Sent: sent}, nil
	}
	args := []any{"LOCK.ACQUIRE", key, owner, ttl.Milliseconds()}
	if !try {
		args = append(args, "WAIT", max(wait.Milliseconds(), 1))
	}
	args = append(args, "ID", "tc-"+NewOwner())
	v, err := b.rc.Do(ctx, args...).Int64Slice()
	if err != nil {
		return Grant{}, respErr(err)
	}
	if len(v) != 2 {
		return Grant{}, fmt.Errorf("testcluster: LOCK.ACQUIRE answered %v", v)
	}
	return Grant{Fence: uint64(v[0]), Deadline: v[1], Sent: sent}, nil
}

func (b respBackend) release(ctx context.Context, key, owner string) (bool, error) {
	if b.scripts {
		return b.scriptRelease(ctx, key, owner)
	}
	var n int64
	var err error
	if b.setNX {
		n, err = b.rc.Eval(ctx, casDelete, []string{key}, owner).Int64()
	} else {
		n, err = b.rc.Do(ctx, "LOCK.RELEASE", key, owner, "ID", "tc-"+NewOwner()).Int64()
	}
	if err != nil {
		return false, respErr(err)
	}
	return n == 1, nil
}

func (b respBackend) extend(ctx context.Context, key, owner string, ttl time.Duration) (Grant, error) {
	if b.scripts {
		return b.scriptExtend(ctx, key, owner, ttl)
	}
	sent := time.Now()
	v, err := b.rc.Do(ctx, "LOCK.EXTEND", key, owner, ttl.Milliseconds(), "ID", "tc-"+NewOwner()).Int64Slice()
	if err != nil {
		return Grant{}, respErr(err)
	}
	if len(v) != 2 {
		return Grant{}, fmt.Errorf("testcluster: LOCK.EXTEND answered %v", v)
	}
	return Grant{Fence: uint64(v[0]), Deadline: v[1], Sent: sent}, nil
}

func (b respBackend) get(ctx context.Context, key string) (string, uint64, int64, int64, error) {
	s, err := b.rc.Get(ctx, key).Result()
	if errors.Is(err, redis.Nil) {
		return "", 0, 0, 0, nil
	}
	return s, 0, 0, 0, respErr(err)
}
