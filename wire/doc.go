// Package wire is the HTTP contract of locknode, shared by the server
// (package httpapi) and its clients (packages client and fence): the
// route paths and headers, the request bodies that are not api types,
// the fast JSON codec of the hot routes, and the one table between api
// sentinels and (HTTP status, error code).
//
// It imports only package api and the standard library, so a program
// that speaks the API links no server code: no raft, no prometheus, no
// dashboard (deps_test.go checks client and fence).
//
// Both sides use the same table: the server answers an error with
//
//	status, code := wire.StatusOf(err)
//
// and the client turns the code of an api.ErrorBody back into the
// sentinel callers branch on:
//
//	if errors.Is(wire.ErrorOf(body.Code), api.ErrLocked) { ... }
//
// The codec never decides anything encoding/json would decide
// differently: AppendJSON and DecodeJSON report false for whatever they
// do not handle, and the caller runs encoding/json on the same value or
// bytes.
package wire
