package fsm

import "errors"

// errCodes numbers the FSM's refusals: a refusal's code is 1 + its
// sentinel's position here. The numbers are part of the snapshot format
// (remembered results of requests) and of the result encoding that
// forwarding carries between nodes, so this list is append only.
var errCodes = []error{ErrBadCommand, ErrLocked, ErrNotOwner, ErrNotHeld, ErrNoSuchKey,
	ErrWaitTimeout, ErrCancelled, ErrPermits, ErrWrongType, ErrSessionUnknown,
	ErrSessionExists, ErrLimit, ErrBadTTL, ErrStaleFence, ErrLockDelay, ErrBadVersion, ErrMaxHold,
	ErrOutOfMemory}

// CodeUnknown is the code of an error that wraps none of the FSM's
// sentinels; its text is all a receiver gets.
const CodeUnknown = 255

// ErrorCode returns err's code: 0 for nil, 1 + its sentinel's position
// in the code list, or CodeUnknown.
func ErrorCode(err error) uint8 {
	if err == nil {
		return 0
	}
	for i, base := range errCodes {
		if errors.Is(err, base) {
			return uint8(i + 1)
		}
	}
	return CodeUnknown
}

// ErrorOfCode returns the sentinel numbered code, or nil when code names
// none (0, CodeUnknown, or a code from a newer release).
func ErrorOfCode(code uint8) error {
	if code >= 1 && int(code) <= len(errCodes) {
		return errCodes[code-1]
	}
	return nil
}
