package client

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/wire"
)

var _ api.LockWatcher = (*Client)(nil)

// inspector is the part of a Client that reads the lock table without
// holding anything: Inspect, List and Watch.
type inspector struct {
	*caller
}

// watchWait is how long one blocking query of Watch waits on the server
// before it is re-asked: long enough that an idle watcher costs a request
// every few minutes, short enough that a watcher whose node vanished
// without a word (its connection kept open by a broken middlebox) moves
// on within it.
const watchWait = 5 * time.Minute

// Watch sends key's state (api.LockInfo with State and Index; a key with
// nothing at it is api.StateFree) at once and then after each change,
// until ctx ends; the channel is closed then. It is for code that does
// not hold the lock: a standby waiting for its turn to try, a dashboard.
// A holder learns of its own loss from its Lock's Lost channel instead.
//
// Each state comes from a blocking query (GET /v1/locks/{key}?index=N,
// docs/http-api.md "Blocking queries"), a linearizable read, on any node;
// no request runs while nothing changes but one re-ask every few minutes.
// When a node fails, or answers that it cannot serve (no leader, too many
// watchers), the query moves to the next endpoint, with back-off, and
// carries on from the last index, so no change after the last state sent
// is missed; one that a down cluster kept from being read arrives once a
// node answers again. A state not yet received when the next arrives is
// replaced by it: a slow reader sees the latest, not every step. A state
// may repeat when the key's index moved without a visible change.
//
// The first read's failure is returned (a bad key, no permission, no
// node reachable); later failures are retried until ctx ends.
func (c *inspector) Watch(ctx context.Context, key string) (<-chan api.LockInfo, error) {
	if err := c.cfg.Limits.CheckKey(key); err != nil {
		return nil, err
	}
	first, err := c.watchRead(ctx, key)
	if err != nil {
		return nil, err
	}
	out := make(chan api.LockInfo, 1)
	out <- first
	// Ends when ctx ends: every request and back-off selects on it.
	go func() {
		defer close(out)
		last := first.Index
		for round := 1; ; {
			info, err := c.watchQuery(ctx, key, last, watchWait)
			if ctx.Err() != nil {
				return
			}
			if err != nil {
				c.log.Debug("watch: blocking query failed, retrying", "lock", key, "index", last, "error", err)
				t := time.NewTimer(c.cfg.Retry.backoff(round))
				select {
				case <-t.C:
				case <-ctx.Done():
					t.Stop()
					return
				}
				round++
				continue
			}
			round = 1
			if info.Index == last {
				continue // the wait passed without a change
			}
			// A smaller index (another node that learned of the key
			// later) is taken as is: it is never below a change not yet
			// seen, so waiting from it misses nothing.
			last = info.Index
			select {
			case out <- info:
			default:
				// The reader has not taken the previous state: replace
				// it (this goroutine is the only sender).
				select {
				case <-out:
				default:
				}
				out <- info
			}
		}
	}()
	return out, nil
}

// watchRead reads key's state and index at once (a plain read, which
// answers a free key 404 with its index).
func (c *inspector) watchRead(ctx context.Context, key string) (api.LockInfo, error) {
	var info api.LockInfo
	var idx uint64
	_, err := c.do(ctx, call{op: "watch", method: http.MethodGet, path: wire.PathLockPrefix + escapeKey(key), out: &info, index: &idx})
	if errors.Is(err, api.ErrNotFound) {
		return api.FreeLock(key, idx), nil
	}
	if info.State == "" {
		info.State = api.StateOf(info)
	}
	return info, err
}

// watchQuery is one blocking query: key's state once its index is above
// index or wait passes.
func (c *inspector) watchQuery(ctx context.Context, key string, index uint64, wait time.Duration) (api.LockInfo, error) {
	path := wire.PathLockPrefix + escapeKey(key) + "?index=" + strconv.FormatUint(index, 10) + "&wait=" + wait.String()
	var info api.LockInfo
	// The server may add up to wait/16 of jitter.
	_, err := c.do(ctx, call{op: "watch", method: http.MethodGet, path: path, wait: wait + wait/16, out: &info})
	return info, err
}

// Inspect implements api.Locker over GET /v1/locks/{key}.
func (c *inspector) Inspect(ctx context.Context, key string, opts api.ReadOptions) (api.LockInfo, error) {
	if err := c.cfg.Limits.CheckKey(key); err != nil {
		return api.LockInfo{}, err
	}
	path := wire.PathLockPrefix + escapeKey(key)
	if opts.Stale {
		path += "?stale=true"
	}
	var info api.LockInfo
	_, err := c.do(ctx, call{op: "inspect", method: http.MethodGet, path: path, out: &info})
	return info, err
}

// List implements api.Locker over GET /v1/locks.
func (c *inspector) List(ctx context.Context, req api.ListRequest) (api.ListResult, error) {
	if err := req.Validate(c.cfg.Limits); err != nil {
		return api.ListResult{}, err
	}
	q := url.Values{}
	if req.Prefix != "" {
		q.Set("prefix", req.Prefix)
	}
	if req.After != "" {
		q.Set("after", req.After)
	}
	if req.Limit != 0 {
		q.Set("limit", strconv.Itoa(req.Limit))
	}
	if req.Stale {
		q.Set("stale", "true")
	}
	path := wire.PathLocks
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var res api.ListResult
	_, err := c.do(ctx, call{op: "list", method: http.MethodGet, path: path, out: &res})
	return res, err
}
