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

func errCode(err error) byte { return fsm.ErrorCode(err) }

// remoteError is an FSM refusal decoded from a forwarded result: the
// leader's text, and the sentinel for errors.Is.
type remoteError struct {
	sentinel error
	msg      string
}

func (e *remoteError) Error() string { return e.msg }
func (e *remoteError) Unwrap() error { return e.sentinel }

func decodeErr(code byte, msg string) error {
	if sentinel := fsm.ErrorOfCode(code); sentinel != nil {
		return &remoteError{sentinel: sentinel, msg: msg}
	}
	return errors.New(msg)
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
