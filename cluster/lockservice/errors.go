package lockservice

import (
	"errors"

	"github.com/locknode/locknode/internal/apierr"
)

// Errors of the lock service; cluster returns the same values
// (cluster.ErrClosed, cluster.ErrConfig).
var (
	ErrConfig = errors.New("cluster: invalid config")
	ErrClosed = errors.New("cluster: node closed")
)

// apiErr maps an FSM refusal to the api error callers branch on, by the
// one table every front end shares (internal/apierr).
func apiErr(err error) error { return apierr.FromFSM(err) }
