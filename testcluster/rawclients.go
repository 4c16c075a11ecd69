package testcluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locknode/locknode/api"
)

// Clients as users write them without the Go client: plain HTTP with
// JSON, and Redis lock libraries' scripts through the RESP bridge.

// RawHTTPClient is a client that speaks the HTTP API with net/http and
// JSON it encodes itself, as a program in another language would: one
// node at a time (node first), moving to the next on a connection error
// or a 503, no request ids, no retries.
func (c *Cluster) RawHTTPClient(h *History, id, node int) *Client {
	hc := c.httpClient()
	if hc == nil {
		hc = &http.Client{}
	}
	hc = &http.Client{Transport: hc.Transport, Timeout: 5 * time.Second}
	return &Client{h: h, id: id, via: "raw http", b: &rawHTTPBackend{hc: hc, endpoints: c.Endpoints(), next: node}}
}

type rawHTTPBackend struct {
	hc        *http.Client
	endpoints []string

	mu   sync.Mutex
	next int // index into endpoints of the node asked next
}

// errRawHTTP is an answer of no definite outcome (a 5xx, a body that is
// not the API's): the operation may have taken effect.
var errRawHTTP = errors.New("testcluster: raw http")

// rawErrors maps the API's stable error codes (docs/http-api.md,
// "Errors") to the outcomes the model knows; every other answer is of
// unknown outcome.
var rawErrors = map[string]error{
	"locked": api.ErrLocked, "not_owner": api.ErrNotOwner, "not_held": api.ErrNotHeld,
	"wait_timeout": api.ErrWaitTimeout, "not_found": api.ErrNotFound,
}

// call sends one request to the current node and decodes a 2xx answer
// into out.
func (b *rawHTTPBackend) call(ctx context.Context, method, path string, body, out any) error {
	b.mu.Lock()
	base := b.endpoints[b.next%len(b.endpoints)]
	b.mu.Unlock()
	var rd io.Reader
	if body != nil {
		buf, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(buf)
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := b.hc.Do(req)
	if err != nil {
		b.moveOn()
		return fmt.Errorf("%w: %v", errRawHTTP, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("%w: reading the answer: %v", errRawHTTP, err)
	}
	if resp.StatusCode/100 == 2 {
		if out == nil {
			return nil
		}
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("%w: answer %s: %v", errRawHTTP, data, err)
		}
		return nil
	}
	var e struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	}
	_ = json.Unmarshal(data, &e)
	if sentinel, ok := rawErrors[e.Code]; ok && resp.StatusCode < 500 {
		return fmt.Errorf("%w: %d %s", sentinel, resp.StatusCode, e.Message)
	}
	if resp.StatusCode >= 500 {
		b.moveOn()
	}
	return fmt.Errorf("%w: %d %s", errRawHTTP, resp.StatusCode, data)
}

func (b *rawHTTPBackend) moveOn() {
	b.mu.Lock()
	b.next++
	b.mu.Unlock()
}

// rawLease is the part of the API's Lease a raw client reads.
type rawLease struct {
	Fence    uint64 `json:"fence"`
	Deadline int64  `json:"deadline_ms"`
}

func (b *rawHTTPBackend) acquire(ctx context.Context, key, owner string, ttl, wait time.Duration, try bool) (Grant, error) {
	req := map[string]any{"key": key, "owner": owner, "ttl_ms": ttl.Milliseconds()}
	path := "/v1/locks/try"
	if !try {
		path = "/v1/locks/acquire"
		req["wait_ms"] = max(wait.Milliseconds(), 1)
	}
	sent := time.Now()
	var l rawLease
	err := b.call(ctx, http.MethodPost, path, req, &l)
	return Grant{Fence: l.Fence, Deadline: l.Deadline, Sent: sent}, err
}

func (b *rawHTTPBackend) release(ctx context.Context, key, owner string) (bool, error) {
	var r struct {
		Released bool `json:"released"`
	}
	err := b.call(ctx, http.MethodPost, "/v1/locks/release", map[string]any{"key": key, "owner": owner}, &r)
	return r.Released, err
}

func (b *rawHTTPBackend) extend(ctx context.Context, key, owner string, ttl time.Duration) (Grant, error) {
	sent := time.Now()
	var l rawLease
	err := b.call(ctx, http.MethodPost, "/v1/locks/extend", map[string]any{"key": key, "owner": owner, "ttl_ms": ttl.Milliseconds()}, &l)
	return Grant{Fence: l.Fence, Deadline: l.Deadline, Sent: sent}, err
}

func (b *rawHTTPBackend) get(ctx context.Context, key string) (string, uint64, int64, int64, error) {
	var info struct {
		Holders []struct {
			Owner    string `json:"owner"`
			Mode     string `json:"mode"`
			Fence    uint64 `json:"fence"`
			TTLMs    int64  `json:"ttl_ms"`
			Deadline int64  `json:"deadline_ms"`
		} `json:"holders"`
	}
	err := b.call(ctx, http.MethodGet, "/v1/locks/"+url.PathEscape(key), nil, &info)
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

// The scripts of Redis lock libraries (redsync, bsm/redislock, redis-py's
// Lock): compare-and-delete to release, compare-and-pexpire to renew.
var (
	scriptRelease = redis.NewScript(`if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`)
	scriptRenew   = redis.NewScript(`if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("pexpire", KEYS[1], ARGV[2]) else return 0 end`)
)

// ScriptClient is a Redlock-style client of node i's RESP bridge, as
// redsync and its kin are with one instance: SET NX PX to take a key
// (a wait polls it, as they retry), and the compare-and-delete and
// compare-and-pexpire scripts by EVALSHA, falling back to EVAL on
// NOSCRIPT, to give it back and renew it. No fence is reported; the
// history's checkers judge it.
func (c *Cluster) ScriptClient(h *History, id, node int) *Client {
	cl := c.RESPClient(h, id, node, true)
	cl.via += " scripts"
	b := cl.b.(respBackend)
	b.scripts = true
	cl.b = b
	return cl
}

// scriptRetry is how often a waiting script client tries SET NX again
// (redsync's default retry delay is 50-250 ms).
const scriptRetry = 50 * time.Millisecond

// scriptAcquire is SET NX PX, retried every scriptRetry until wait has
// passed. An attempt of unknown outcome ends the wait: the key may be
// the client's already, and another SET NX would be refused by it.
func (b respBackend) scriptAcquire(ctx context.Context, key, owner string, ttl, wait time.Duration, try bool) (Grant, error) {
	sent := time.Now()
	end := sent.Add(wait)
	for {
		ok, err := b.rc.SetNX(ctx, key, owner, ttl).Result()
		if err != nil {
			return Grant{}, respErr(err)
		}
		if ok {
			return Grant{Sent: sent}, nil
		}
		if try || !time.Now().Add(scriptRetry).Before(end) {
			if try {
				return Grant{}, fmt.Errorf("%w: SET NX answered nil", api.ErrLocked)
			}
			return Grant{}, fmt.Errorf("%w: SET NX answered nil until the wait ran out", api.ErrWaitTimeout)
		}
		t := time.NewTimer(scriptRetry)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return Grant{}, ctx.Err()
		}
	}
}

func (b respBackend) scriptRelease(ctx context.Context, key, owner string) (bool, error) {
	n, err := scriptRelease.Run(ctx, b.rc, []string{key}, owner).Int64()
	if err != nil {
		return false, respErr(err)
	}
	return n == 1, nil
}

func (b respBackend) scriptExtend(ctx context.Context, key, owner string, ttl time.Duration) (Grant, error) {
	sent := time.Now()
	n, err := scriptRenew.Run(ctx, b.rc, []string{key}, owner, ttl.Milliseconds()).Int64()
	if err != nil {
		return Grant{}, respErr(err)
	}
	if n != 1 {
		return Grant{}, fmt.Errorf("%w: compare-and-pexpire answered %d", api.ErrNotHeld, n)
	}
	return Grant{Sent: sent}, nil
}
