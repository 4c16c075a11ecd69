//go:build !unix

package client

import "net"

// peekConn cannot inspect a connection here: it counts as open, and a
// closed one shows when it is used.
func peekConn(net.Conn) bool { return true }
