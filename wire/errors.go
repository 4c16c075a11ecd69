package wire

import (
	"context"
	"errors"
	"net/http"

	"github.com/locknode/locknode/api"
)

// Errors of the HTTP layer itself, before a request reaches the Locker.
// Their texts keep the "httpapi:" prefix of the server that sends them:
// they are the messages of its answers.
var (
	// ErrBodyTooLarge: a request body over httpapi.Config.MaxBodyBytes (413, code
	// "limit", which the client maps back to api.ErrLimit).
	ErrBodyTooLarge = errors.New("httpapi: request body too large")
	// ErrBodyTimeout: a request body not received within
	// httpapi.Config.BodyTimeout (408, code "bad_request").
	ErrBodyTimeout = errors.New("httpapi: request body not received in time")
	// ErrTooManyConns: the node is at httpapi.Config.MaxConns open connections
	// (503, code "too_many_connections"); another node may have room.
	ErrTooManyConns = errors.New("httpapi: too many connections")
)

// CodeTooManyConns is the wire code of ErrTooManyConns.
const CodeTooManyConns = "too_many_connections"

// ErrTooManyWatchers refuses a blocking query while
// httpapi.Config.MaxWatchers others wait on this node (503, code
// "too_many_watchers"); another node may have room.
var ErrTooManyWatchers = errors.New("httpapi: too many blocking queries waiting")

// CodeTooManyWatchers is ErrTooManyWatchers' wire code.
const CodeTooManyWatchers = "too_many_watchers"

// ErrContentType refuses a request that may change something but does
// not say Content-Type: application/json (415).
var ErrContentType = errors.New("httpapi: write requests need Content-Type: application/json")

// CodeUnsupportedMediaType is ErrContentType's wire code.
const CodeUnsupportedMediaType = "unsupported_media_type"

// errorMapping ties one api sentinel to its HTTP status and wire code.
type errorMapping struct {
	Err    error
	Status int
	Code   string
}

// errorTable is THE mapping between api errors and the wire, used in both
// directions: the server turns an error into (status, code) and the client
// turns a code back into the sentinel. Order matters only for errors that
// wrap several sentinels: the first match wins.
var errorTable = []errorMapping{
	{api.ErrLocked, http.StatusLocked, api.CodeLocked},
	{api.ErrLockDelay, http.StatusLocked, api.CodeLockDelay},
	{api.ErrNotOwner, http.StatusConflict, api.CodeNotOwner},
	{api.ErrStaleFence, http.StatusConflict, api.CodeStaleFence},
	{api.ErrConflict, http.StatusConflict, api.CodeConflict},
	{api.ErrMaxHold, http.StatusConflict, api.CodeMaxHold},
	{api.ErrNotHeld, http.StatusNotFound, api.CodeNotHeld},
	{api.ErrNotFound, http.StatusNotFound, api.CodeNotFound},
	{api.ErrWaitTimeout, http.StatusRequestTimeout, api.CodeWaitTimeout},
	{api.ErrCancelled, http.StatusRequestTimeout, api.CodeCancelled},
	{api.ErrNoLeader, http.StatusServiceUnavailable, api.CodeNoLeader},
	{api.ErrSessionExpired, http.StatusGone, api.CodeSessionExpired},
	{api.ErrBadRequest, http.StatusBadRequest, api.CodeBadRequest},
	{api.ErrLimit, http.StatusBadRequest, api.CodeLimit},
	{api.ErrOutOfMemory, http.StatusInsufficientStorage, api.CodeOutOfMemory},
	{ErrContentType, http.StatusUnsupportedMediaType, CodeUnsupportedMediaType},
	{api.ErrUnauthorized, http.StatusUnauthorized, api.CodeUnauthorized},
	{api.ErrForbidden, http.StatusForbidden, api.CodeForbidden},
	// A request whose context ended: the client went away (or its own
	// deadline passed). Nobody may read the answer, but it must be honest.
	{context.Canceled, http.StatusRequestTimeout, api.CodeCancelled},
	{context.DeadlineExceeded, http.StatusRequestTimeout, api.CodeWaitTimeout},
	// After the api rows, so a code they share maps back to the api
	// sentinel in ErrorOf.
	{ErrBodyTooLarge, http.StatusRequestEntityTooLarge, api.CodeLimit},
	{ErrBodyTimeout, http.StatusRequestTimeout, api.CodeBadRequest},
	{ErrTooManyConns, http.StatusServiceUnavailable, CodeTooManyConns},
	{ErrTooManyWatchers, http.StatusServiceUnavailable, CodeTooManyWatchers},
}

// StatusOf returns the HTTP status and wire code for err: the first
// errorTable entry err matches with errors.Is, else 500 "internal".
func StatusOf(err error) (status int, code string) {
	for _, m := range errorTable {
		if errors.Is(err, m.Err) {
			return m.Status, m.Code
		}
	}
	return http.StatusInternalServerError, api.CodeInternal
}

// ErrorOf returns the api sentinel for a wire code, or nil for an unknown
// code (including "internal").
func ErrorOf(code string) error {
	for _, m := range errorTable {
		if m.Code == code {
			return m.Err
		}
	}
	return nil
}

// Retryable reports whether an answer with this HTTP status may be retried
// on another endpoint with the same request id: the node could not reach a
// leader (503), or a gateway in between failed (502, 504).
func Retryable(status int) bool {
	switch status {
	case http.StatusServiceUnavailable, http.StatusBadGateway, http.StatusGatewayTimeout:
		return true
	}
	return false
}
