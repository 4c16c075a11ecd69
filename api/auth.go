package api

import "errors"

// Errors of authentication and permissions (HTTP 401 and 403), kept
// apart from the lock outcomes above.
var (
	ErrUnauthorized = errors.New("locknode: authentication required or failed") // HTTP 401
	ErrForbidden    = errors.New("locknode: permission denied")                 // HTTP 403
)

// Wire codes of ErrUnauthorized and ErrForbidden.
const (
	CodeUnauthorized = "unauthorized"
	CodeForbidden    = "forbidden"
)
