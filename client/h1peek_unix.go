//go:build unix

package client

import (
	"errors"
	"net"
	"syscall"
)

// peekConn looks, without blocking and without consuming anything,
// whether the peer has closed c or sent bytes: true when neither (the
// read would block). A connection that cannot be inspected counts as
// open; a failure then shows when it is used.
func peekConn(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return true
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return true
	}
	alive := true
	var buf [1]byte
	err = rc.Read(func(fd uintptr) bool {
		_, _, rerr := syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		// No error means EOF (0 bytes) or bytes nobody asked for: either
		// way not a connection to send a request on. EAGAIN: open, idle.
		alive = errors.Is(rerr, syscall.EAGAIN) || errors.Is(rerr, syscall.EWOULDBLOCK) || errors.Is(rerr, syscall.EINTR)
		return true // never wait for readiness
	})
	return err == nil && alive
}
