// Package netguardtest has the fault a listening port's tests inject: a
// listener out of file descriptors.
package netguardtest

import (
	"net"
	"os"
	"sync/atomic"
	"syscall"
)

// EMFILE is the error accept(2) gives a process out of descriptors, as
// the net package wraps it.
var EMFILE error = &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.EMFILE)}

// Listener is a net.Listener whose Accept fails with EMFILE while Fail is
// set, without taking the waiting connections: they are accepted once it
// is cleared, as when descriptors free up.
type Listener struct {
	net.Listener
	Fail  atomic.Bool
	fails atomic.Int64
}

// New wraps ln.
func New(ln net.Listener) *Listener { return &Listener{Listener: ln} }

// Accept fails with EMFILE while Fail is set.
func (l *Listener) Accept() (net.Conn, error) {
	if l.Fail.Load() {
		l.fails.Add(1)
		return nil, EMFILE
	}
	return l.Listener.Accept()
}

// Fails returns the accepts failed so far.
func (l *Listener) Fails() int64 { return l.fails.Load() }
