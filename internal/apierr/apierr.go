// Package apierr maps the key space's refusals (the fsm.Err* sentinels)
// to the api errors (api.Err*) callers branch on, once, for every front
// end: the lock service (cluster) returns them to api.Locker callers and
// HTTP, the RESP bridge writes them as its error replies.
//
//	res := table.Apply(index, cmd)
//	err := apierr.FromFSM(res.Err) // errors.Is(err, api.ErrLocked) and fsm.ErrLocked
package apierr

import (
	"errors"
	"fmt"
	"strings"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/fsm"
)

// errTable maps the key space's refusals to the api errors callers branch
// on. Their codes in forwarded results are fsm's (fsm.ErrorCode).
var errTable = []struct {
	fsm error
	api error
}{
	{fsm.ErrBadCommand, api.ErrBadRequest},
	{fsm.ErrLocked, api.ErrLocked},
	{fsm.ErrNotOwner, api.ErrNotOwner},
	{fsm.ErrNotHeld, api.ErrNotHeld},
	{fsm.ErrNoSuchKey, api.ErrNotFound},
	{fsm.ErrWaitTimeout, api.ErrWaitTimeout},
	{fsm.ErrCancelled, api.ErrCancelled},
	{fsm.ErrPermits, api.ErrConflict},
	{fsm.ErrWrongType, api.ErrConflict},
	{fsm.ErrSessionUnknown, api.ErrSessionExpired},
	{fsm.ErrSessionExists, api.ErrConflict},
	{fsm.ErrLimit, api.ErrLimit},
	{fsm.ErrBadTTL, api.ErrBadRequest},
	{fsm.ErrStaleFence, api.ErrStaleFence},
	{fsm.ErrLockDelay, api.ErrLockDelay},
	{fsm.ErrBadVersion, api.ErrBadRequest},
	{fsm.ErrMaxHold, api.ErrMaxHold},
	{fsm.ErrOutOfMemory, api.ErrOutOfMemory},
}

// FromFSM maps an FSM refusal to the api error callers branch on; both
// stay visible to errors.Is. Errors that are not FSM refusals (no
// leader, ctx ended, closed), and refusals mapped already, pass through.
func FromFSM(err error) error {
	if err == nil {
		return nil
	}
	var r *refusal
	if errors.As(err, &r) {
		return err
	}
	for _, row := range errTable {
		if errors.Is(err, row.fsm) {
			return &refusal{api: row.api, fsm: err}
		}
	}
	return err
}

// refusal is an FSM refusal seen through the api: errors.Is finds both
// sentinels, and its text states the cause once, in the api's words,
// followed by what the FSM added (the key, the limit).
type refusal struct {
	api error // the api sentinel
	fsm error // the FSM's error, wrapping its sentinel
}

func (r *refusal) Error() string {
	text := r.fsm.Error()
	for _, row := range errTable {
		if errors.Is(r.fsm, row.fsm) {
			// The FSM's own words stay where they say more than the
			// api's (a conflict of permits, of value type).
			own := strings.TrimPrefix(row.fsm.Error(), "fsm: ")
			if own == strings.TrimPrefix(r.api.Error(), "locknode: ") {
				own = ""
			}
			text = own + strings.TrimPrefix(text, row.fsm.Error())
			break
		}
	}
	text = strings.TrimPrefix(text, ": ")
	if text == "" {
		return r.api.Error()
	}
	return fmt.Sprintf("%v: %s", r.api, text)
}

func (r *refusal) Unwrap() []error { return []error{r.api, r.fsm} }
