package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/locknode/locknode/api"
)

// Errors of the HTTP layer itself, before a request reaches the Locker.
var (
	// ErrBodyTooLarge: a request body over Config.MaxBodyBytes (413, code
	// "limit", which the client maps back to api.ErrLimit).
	ErrBodyTooLarge = errors.New("httpapi: request body too large")
	// ErrBodyTimeout: a request body not received within
	// Config.BodyTimeout (408, code "bad_request").
	ErrBodyTimeout = errors.New("httpapi: request body not received in time")
	// ErrTooManyConns: the node is at Config.MaxConns open connections
	// (503, code "too_many_connections"); another node may have room.
	ErrTooManyConns = errors.New("httpapi: too many connections")
)

// CodeTooManyConns is the wire code of ErrTooManyConns.
const CodeTooManyConns = "too_many_connections"

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

// jsonErrorText says what is wrong with a request body in the API's
// terms (field names as in the JSON, what the field wants), never in Go's
// (struct and type names).
func jsonErrorText(err error) string {
	var (
		typ *json.UnmarshalTypeError
		syn *json.SyntaxError
	)
	switch {
	case errors.As(err, &typ):
		if typ.Field == "" {
			return fmt.Sprintf("the body must be a JSON object, not %s", jsonKind(typ.Value))
		}
		return fmt.Sprintf("field %s: want %s, not %s", typ.Field, wantOf(typ.Field, typ.Type.String()), jsonKind(typ.Value))
	case errors.As(err, &syn):
		return fmt.Sprintf("the body is not valid JSON (at byte %d: %s)", syn.Offset, syn.Error())
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return "the body is not valid JSON: it ends early"
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return "unknown field " + strings.TrimPrefix(err.Error(), "json: unknown field ") + "; see the API reference (docs/http-api.md) for this request's fields"
	}
	return "the body is not valid JSON: " + strings.TrimPrefix(err.Error(), "json: ")
}

// wantOf says what a field of Go type goType takes, in JSON terms;
// fields ending in _ms are durations in whole milliseconds.
func wantOf(field, goType string) string {
	switch {
	case strings.HasSuffix(field, "_ms"):
		return "a whole number of milliseconds"
	case strings.HasPrefix(goType, "int"), strings.HasPrefix(goType, "uint"):
		return "a whole number"
	case strings.HasPrefix(goType, "float"):
		return "a number"
	case goType == "string":
		return "a string"
	case goType == "bool":
		return "true or false"
	case goType == "[]string":
		return "an array of strings"
	case strings.HasPrefix(goType, "[]"):
		return "an array"
	case strings.HasPrefix(goType, "map["):
		return "an object of strings"
	}
	return "another kind of value"
}

// jsonKind names the JSON value an UnmarshalTypeError found ("number",
// "string", "array", "object", "bool", or "number 1.5").
func jsonKind(v string) string {
	switch {
	case v == "bool":
		return "true or false"
	case strings.HasPrefix(v, "number "):
		return "the number " + strings.TrimPrefix(v, "number ")
	case v == "array", v == "object", v == "string", v == "number":
		return "a" + map[bool]string{true: "n", false: ""}[v == "array" || v == "object"] + " " + v
	}
	return v
}
