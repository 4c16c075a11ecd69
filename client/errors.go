package client

import "errors"

// Causes of a Lock's Context ending (context.Cause) and of a Session's end
// (Session.Err). api sentinels (api.ErrLocked, ...) come wrapped from the
// server; these are the client's own.
var (
	ErrJeopardy   = errors.New("client: lock in jeopardy: renewal failing close to the safe deadline")
	ErrLost       = errors.New("client: lock lost")
	ErrUnlocked   = errors.New("client: lock released by Unlock")
	ErrSessionEnd = errors.New("client: session ended")
	ErrNoProgress = errors.New("client: no progress reported within the progress timeout; renewal stopped")
	// ErrLeadershipLost: the election is held by another campaign, or by
	// none, while a Leadership believed it led (Leadership.Err).
	ErrLeadershipLost = errors.New("client: leadership lost")
	ErrResigned       = errors.New("client: leadership resigned")
)
