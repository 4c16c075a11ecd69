package lockservice

import (
	"context"
	"errors"

	"github.com/locknode/locknode/api"
)

// Watching keys: change indexes (keywatch.go) served to blocking queries
// and to Watch.

var _ api.LockWatcher = (*Service)(nil)

// KeyIndex returns the index of key's last change as this node knows it:
// the raft index of the last applied entry that changed the key, or a
// larger one (never 0) when this node does not track the key at the
// moment. A later change always has a larger index, so WaitKeyChange with
// it wakes for that change. Read it before the key's state, so the state
// is at least as new as the index.
func (s *Service) KeyIndex(key string) uint64 {
	return s.r.KeyWatches().index(key, false)
}

// PrefixIndex is KeyIndex for the keys that start with prefix together
// ("" for every key).
func (s *Service) PrefixIndex(prefix string) uint64 {
	return s.r.KeyWatches().index(prefix, true)
}

// WaitKeyChange blocks until KeyIndex(key) is above index, and returns
// it. It returns early with ctx's error when ctx ends, or ErrClosed when
// the node closes, first. A waiting call costs a channel receive, no
// goroutine or timer: the entry that changes key wakes the calls waiting
// on it, and only those.
func (s *Service) WaitKeyChange(ctx context.Context, key string, index uint64) (uint64, error) {
	return s.r.KeyWatches().wait(ctx, s.r.Closing(), key, false, index)
}

// WaitPrefixChange is WaitKeyChange for any key that starts with prefix.
func (s *Service) WaitPrefixChange(ctx context.Context, prefix string, index uint64) (uint64, error) {
	return s.r.KeyWatches().wait(ctx, s.r.Closing(), prefix, true, index)
}

// KeyWatchers returns how many WaitKeyChange and WaitPrefixChange calls
// are waiting.
func (s *Service) KeyWatchers() int {
	return s.r.KeyWatches().watchers()
}

// inspectIndexed is Inspect with the key's change index (read first); a
// key with nothing at it answers api.FreeLock instead of ErrNotFound.
func (s *Service) inspectIndexed(ctx context.Context, key string, stale bool) (api.LockInfo, error) {
	idx := s.KeyIndex(key)
	info, err := s.Inspect(ctx, key, api.ReadOptions{Stale: stale})
	if errors.Is(err, api.ErrNotFound) {
		return api.FreeLock(key, idx), nil
	}
	info.Index = idx
	return info, err
}

// Watch sends key's state (api.LockInfo with State and Index) at once,
// read linearizably, and again after every change of the key this node
// applies, until ctx ends or the node closes; the channel is closed then.
// A key with nothing at it is sent as api.FreeLock. A state the reader has
// not taken when the next arrives is replaced by it; a state may repeat
// when the key's index moved without a visible change. It is for code
// that does not hold the lock (a standby, a dashboard); a holder learns of
// its loss from its lease's own signals. It returns an error when the key
// is invalid or the first read fails.
func (s *Service) Watch(ctx context.Context, key string) (<-chan api.LockInfo, error) {
	if err := s.Limits().CheckKey(key); err != nil {
		return nil, err
	}
	first, err := s.inspectIndexed(ctx, key, false)
	if err != nil {
		return nil, err
	}
	out := make(chan api.LockInfo, 1)
	out <- first
	// Ends when ctx ends or the node closes.
	go func() {
		defer close(out)
		last := first.Index
		for {
			if _, err := s.WaitKeyChange(ctx, key, last); err != nil {
				return
			}
			// This node applied the change before it woke the wait, so
			// its own state shows it.
			cur, err := s.inspectIndexed(ctx, key, true)
			if err != nil {
				if ctx.Err() != nil || errors.Is(err, ErrClosed) {
					return
				}
				// Wait for the next change rather than re-read at once.
				s.log.Debug("watch: reading the key failed", "lock", key, "error", err)
				last = s.KeyIndex(key)
				continue
			}
			last = cur.Index
			select {
			case out <- cur:
			default:
				// The reader has not taken the previous state: the newer
				// one replaces it (this goroutine is the only sender).
				select {
				case <-out:
				default:
				}
				out <- cur
			}
		}
	}()
	return out, nil
}
