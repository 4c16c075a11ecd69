package main

import (
	"context"
	"errors"
	"strings"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/client"
)

// explain turns a client error into a line for people: the cause first
// (TLS trust, a certificate's names, the scheme, no leader, nothing
// reachable, timed out), then what to do, then the details.
func explain(err error) string {
	var (
		ce   *client.Error
		conn *client.ConnError
	)
	text := api.ClientText(err)
	switch {
	case errors.As(err, &conn) && conn.Cause != client.ConnOther:
		return conn.Error() + hint(conn)
	case errors.As(err, &ce) && errors.Is(err, api.ErrNoLeader) && strings.Contains(ce.Message, "no quorum"):
		// The node said why (api.NoLeaderError).
		return "no leader: " + strings.TrimPrefix(api.CleanText(ce.Message), "no leader reachable: ")
	case errors.As(err, &ce) && errors.Is(err, api.ErrNoLeader):
		return "no leader: the cluster has no quorum or is electing one; check that a majority of the members run and reach each other (" + text + ")"
	case errors.Is(err, api.ErrNoLeader):
		return "no node reachable; check --endpoints / LOCKNODE_ENDPOINTS (" + text + ")"
	case errors.Is(err, context.DeadlineExceeded):
		return "timed out; check --endpoints / LOCKNODE_ENDPOINTS (" + text + ")"
	case errors.Is(err, api.ErrUnauthorized), errors.Is(err, api.ErrForbidden):
		return "not allowed; check --user / LOCKNODE_USER and the password (" + text + ")"
	}
	return text
}

// hint says which flag fixes a connection failure.
func hint(e *client.ConnError) string {
	switch e.Cause {
	case client.ConnUntrusted:
		return "; give --cacert FILE (LOCKNODE_CACERT), the CA that signed the nodes' certificates"
	case client.ConnWrongName:
		return "; use an address the certificate names in --endpoints, or reissue the certificate with this one"
	case client.ConnNeedsHTTPS:
		return " (with --cacert FILE if its CA is not the system's)"
	case client.ConnNeedsHTTP:
		return ", or start the node with --tls-cert and --tls-key"
	case client.ConnClientCert:
		return "; give --cert FILE and --key FILE (LOCKNODE_CERT, LOCKNODE_KEY) signed by the node's --tls-client-ca"
	case client.ConnBadCert:
		return "; renew the node's certificate (--tls-cert)"
	case client.ConnRefused, client.ConnNoHost, client.ConnTimeout:
		return "; check --endpoints / LOCKNODE_ENDPOINTS and that the node runs"
	}
	return ""
}
