package httpapi

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/wire"
)

// Blocking queries (docs/http-api.md "Blocking queries"): GET
// /v1/locks/{key} and GET /v1/locks answer the index of the last change
// of what they show (wire.HeaderIndex and the JSON field index); with
// ?index=N they wait until it is above N, or ?wait=D passes, then answer
// the state as any read does.

const (
	// DefaultBlockingWait is a blocking query's wait when it gives none.
	DefaultBlockingWait = 5 * time.Minute
	// MaxBlockingWait is the longest wait a blocking query may ask;
	// a longer one is refused (400). A watcher re-asks after it, so a
	// node never keeps a request for a client that vanished silently
	// for longer.
	MaxBlockingWait = 10 * time.Minute
	// DefaultMaxWatchers is Config.MaxWatchers' default.
	DefaultMaxWatchers = 10000
)

// ChangeWaiter is the optional side of a Locker that serves blocking
// queries; cluster.Node and cluster.Local implement it. Without it the
// reads answer no index and a blocking query is refused (400).
type ChangeWaiter interface {
	// KeyIndex returns the index of key's last change as the node knows
	// it (a later change has a larger one); PrefixIndex the same for the
	// keys under prefix.
	KeyIndex(key string) uint64
	PrefixIndex(prefix string) uint64
	// WaitKeyChange and WaitPrefixChange block until that index is above
	// index or ctx ends.
	WaitKeyChange(ctx context.Context, key string, index uint64) (uint64, error)
	WaitPrefixChange(ctx context.Context, prefix string, index uint64) (uint64, error)
}

// blockingQuery is a read's ?index= and ?wait=.
type blockingQuery struct {
	has   bool // index was given: a blocking query
	index uint64
	wait  time.Duration
}

// parseBlocking reads ?index=N&wait=D.
func parseBlocking(r *http.Request) (blockingQuery, error) {
	q := r.URL.Query()
	var b blockingQuery
	if v, ok := q["index"]; ok {
		n, err := strconv.ParseUint(v[0], 10, 64)
		if err != nil || len(v) > 1 {
			return b, fmt.Errorf("%w: index=%q is not a whole number ≥ 0 (the %s of the last answer)", api.ErrBadRequest, v[0], wire.HeaderIndex)
		}
		b.has, b.index, b.wait = true, n, DefaultBlockingWait
	}
	if v, ok := q["wait"]; ok {
		if !b.has {
			return b, fmt.Errorf("%w: wait=%q without index: a blocking query sends the index of the last answer", api.ErrBadRequest, v[0])
		}
		d, err := time.ParseDuration(v[0])
		switch {
		case err != nil || len(v) > 1:
			return b, fmt.Errorf("%w: wait=%q is not a duration (e.g. 30s, 5m)", api.ErrBadRequest, v[0])
		case d < 0:
			return b, fmt.Errorf("%w: wait=%q is negative", api.ErrBadRequest, v[0])
		case d > MaxBlockingWait:
			return b, fmt.Errorf("%w: wait=%q is over the maximum %v", api.ErrBadRequest, v[0], MaxBlockingWait)
		case d > 0:
			b.wait = d
		}
	}
	return b, nil
}

// block holds a blocking query until wait reports the change or the
// query's wait (plus up to 1/16 of it, so watchers that started together
// spread out) passes. A query whose index is already behind current
// goes on at once, and is not a watcher. It reports
// false when the request must not go on: refused (answered) or its
// client gone (nobody to answer).
func (s *server) block(w http.ResponseWriter, r *http.Request, q blockingQuery, current uint64, wait func(ctx context.Context) error) bool {
	if current > q.index {
		return true
	}
	if n := s.watchers.Add(1); s.cfg.MaxWatchers > 0 && n > int64(s.cfg.MaxWatchers) {
		s.watchers.Add(-1)
		w.Header().Set("Retry-After", "1")
		s.fail(w, r, fmt.Errorf("%w: %d waiting on this node (--max-watchers)", wire.ErrTooManyWatchers, s.cfg.MaxWatchers))
		return false
	}
	defer s.watchers.Add(-1)
	d := q.wait
	if j := int64(d / 16); j > 0 {
		d += time.Duration(rand.Int64N(j))
	}
	ctx, cancel := context.WithTimeout(r.Context(), d)
	defer cancel()
	// The wait's own error needs no answer: its end (a change, the wait
	// passed, the node closing) is answered by the read that follows.
	_ = wait(ctx)
	return r.Context().Err() == nil
}

// setIndex sets wire.HeaderIndex when the Locker keeps change indexes.
func (s *server) setIndex(w http.ResponseWriter, index uint64) {
	if s.changes != nil {
		w.Header().Set(wire.HeaderIndex, strconv.FormatUint(index, 10))
	}
}

// errNoBlocking refuses a blocking query on a Locker without change
// indexes.
var errNoBlocking = fmt.Errorf("%w: this server does not serve blocking queries (index=)", api.ErrBadRequest)
