package fsm

import (
	"fmt"
	"testing"
)

// TestErrorCodesAppendOnly pins every refusal's code: snapshots and
// forwarded results carry them, so a code never changes meaning.
func TestErrorCodesAppendOnly(t *testing.T) {
	want := []struct {
		err  error
		code uint8
	}{
		{ErrBadCommand, 1}, {ErrLocked, 2}, {ErrNotOwner, 3}, {ErrNotHeld, 4}, {ErrNoSuchKey, 5},
		{ErrWaitTimeout, 6}, {ErrCancelled, 7}, {ErrPermits, 8}, {ErrWrongType, 9},
		{ErrSessionUnknown, 10}, {ErrSessionExists, 11}, {ErrLimit, 12}, {ErrBadTTL, 13},
		{ErrStaleFence, 14}, {ErrLockDelay, 15}, {ErrBadVersion, 16}, {ErrMaxHold, 17},
		{ErrOutOfMemory, 18},
	}
	if len(want) != len(errCodes) {
		t.Fatalf("%d codes, %d pinned here: pin the new ones (append only)", len(errCodes), len(want))
	}
	for _, w := range want {
		if got := ErrorCode(fmt.Errorf("wrapped: %w", w.err)); got != w.code {
			t.Errorf("ErrorCode(%v) = %d, want %d", w.err, got, w.code)
		}
		if got := ErrorOfCode(w.code); got != w.err {
			t.Errorf("ErrorOfCode(%d) = %v, want %v", w.code, got, w.err)
		}
	}
	for _, c := range []struct {
		err  error
		code uint8
	}{{nil, 0}, {fmt.Errorf("other"), CodeUnknown}} {
		if got := ErrorCode(c.err); got != c.code {
			t.Errorf("ErrorCode(%v) = %d, want %d", c.err, got, c.code)
		}
	}
	for _, code := range []uint8{0, 19, CodeUnknown} {
		if err := ErrorOfCode(code); err != nil {
			t.Errorf("ErrorOfCode(%d) = %v, want nil", code, err)
		}
	}
}
