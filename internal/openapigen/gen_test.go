package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/wire"
)

// TestDocumentIsGenerated: the committed httpapi/openapi.json is what
// the generator writes from the current types and tables.
func TestDocumentIsGenerated(t *testing.T) {
	want, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("../../httpapi/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("httpapi/openapi.json is not what internal/openapigen generates: run go generate ./httpapi and commit the result")
	}
}

// TestErrorStatusesNameTheirCodes: the description of each documented
// error status names every code the server answers with that status, and
// every code the server sends is in ErrorBody's enum.
func TestErrorStatusesNameTheirCodes(t *testing.T) {
	sentinels := []error{
		api.ErrLocked, api.ErrNotOwner, api.ErrNotHeld, api.ErrNotFound, api.ErrWaitTimeout, api.ErrNoLeader,
		api.ErrBadRequest, api.ErrSessionExpired, api.ErrStaleFence, api.ErrConflict, api.ErrLimit, api.ErrCancelled,
		api.ErrLockDelay, api.ErrMaxHold, api.ErrOutOfMemory, api.ErrUnauthorized, api.ErrForbidden,
		wire.ErrBodyTooLarge, wire.ErrBodyTimeout, wire.ErrTooManyConns, wire.ErrContentType,
		context.Canceled, context.DeadlineExceeded, errors.New("anything else"),
	}
	for _, err := range sentinels {
		status, code := wire.StatusOf(err)
		if !slices.Contains(errorCodes, code) {
			t.Errorf("%v answers code %q, missing from errorCodes", err, code)
		}
		if d, ok := errorStatus[status]; ok && !strings.Contains(d, code) {
			t.Errorf("%v answers %d %s, but errorStatus[%d] does not name %s: %q", err, status, code, status, code, d)
		}
	}
}
