package cluster

import "github.com/locknode/locknode/internal/apierr"

// apiErr maps an FSM refusal to the api error callers branch on, by the
// one table every front end shares (internal/apierr).
func apiErr(err error) error { return apierr.FromFSM(err) }
