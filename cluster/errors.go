package cluster

import (
	"errors"
	"fmt"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/fsm"
)

// errTable maps FSM refusals to the api errors api.Locker callers branch
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

// apiErr maps an FSM refusal to the api error callers branch on; both
// stay visible to errors.Is. Errors that are not FSM refusals (no
// leader, ctx ended, closed) pass through.
func apiErr(err error) error {
	if err == nil {
		return nil
	}
	for _, row := range errTable {
		if errors.Is(err, row.fsm) {
			return fmt.Errorf("%w: %w", row.api, err)
		}
	}
	return err
}
