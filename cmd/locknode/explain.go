package main

import (
	"context"
	"errors"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/client"
)

// explain turns a client error into a line for people: the cause first
// (no leader, nothing reachable, timed out), then the details, and where
// the addresses came from when none of them answered.
func explain(err error) string {
	var ce *client.Error
	switch {
	case errors.As(err, &ce) && errors.Is(err, api.ErrNoLeader):
		return "no leader: the cluster has no quorum or is electing one (" + err.Error() + ")"
	case errors.Is(err, api.ErrNoLeader):
		return "no node reachable; check --endpoints / LOCKNODE_ENDPOINTS (" + err.Error() + ")"
	case errors.Is(err, context.DeadlineExceeded):
		return "timed out; check --endpoints / LOCKNODE_ENDPOINTS (" + err.Error() + ")"
	case errors.Is(err, api.ErrUnauthorized), errors.Is(err, api.ErrForbidden):
		return "not allowed; check --user / LOCKNODE_USER and the password (" + err.Error() + ")"
	}
	return err.Error()
}
