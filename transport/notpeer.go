package transport

import (
	"bufio"
	"bytes"
	"fmt"
)

// Telling a peer port from another service's: a mistyped address (an
// HTTP or Redis port where a member's raft address belongs) must fail at
// once with a message that says so, not as a stream of bad frames.
//
// Two parts make that work without a new frame or connection type:
//
//   - Every RPC connection starts with a cancel frame for an id no call
//     uses (probeID). A peer ignores a cancel of an unknown id; its last
//     two bytes are "\r\n", so a line-based server (HTTP, RESP) holds a
//     whole line and answers it at once, with an error.
//   - The first byte a peer sends is the top byte of a frame length,
//     which MaxFrameSize keeps at most 0x04; text, a TLS alert, anything
//     else starts higher. readLoop checks that byte before the first
//     frame and names the service when it can.

// probeID is the id of the cancel frame that opens every RPC connection.
// Callers' ids count up from 1 and never reach it.
const probeID uint64 = 0xffff_ffff_ffff_0d0a

// maxFrameLead is the largest first byte of a frame (MaxFrameSize's top
// byte, with the header).
const maxFrameLead = byte((MaxFrameSize + frameHeader) >> 24)

// NotPeerError reports an address that answered in another protocol.
type NotPeerError struct {
	Addr string
	// Service names what answered: "HTTP", "Redis (RESP)", "TLS", or ""
	// when it is not recognised.
	Service string
	// Answer is the start of what it sent.
	Answer string
}

func (e *NotPeerError) Error() string {
	return fmt.Sprintf("transport: %s is not a peer port: that is %s (it answered %q)", e.Addr, e.What(), e.Answer)
}

// What names the kind of port that answered, e.g. "an HTTP port".
func (e *NotPeerError) What() string {
	switch e.Service {
	case "":
		return "a port of another service"
	case "TLS":
		return "a TLS port (peer TLS not set here, or another service)"
	case "HTTP":
		return "an HTTP port"
	}
	return "a " + e.Service + " port"
}

// Is makes errors.Is(err, ErrNotPeer) true.
func (e *NotPeerError) Is(target error) bool { return target == ErrNotPeer }

// checkPeerAnswer waits for the first byte the server sends and returns
// a *NotPeerError if it cannot start a frame; nil if it can, and the
// read error if the connection ends first.
func checkPeerAnswer(r *bufio.Reader, addr string) error {
	b, err := r.Peek(1)
	if err != nil {
		return err
	}
	if b[0] <= maxFrameLead {
		return nil
	}
	// What arrived with it is enough to recognise the service.
	head, _ := r.Peek(min(r.Buffered(), 64))
	e := &NotPeerError{Addr: addr, Answer: string(firstLine(head))}
	switch {
	case bytes.HasPrefix(head, []byte("HTTP/")):
		e.Service = "HTTP"
	case head[0] == '-' || head[0] == '+':
		// A Redis server's error or status reply to the line it read.
		e.Service = "Redis (RESP)"
	case head[0] == 0x15: // a TLS alert record
		e.Service = "TLS"
	}
	return e
}

// firstLine is b up to its first line end.
func firstLine(b []byte) []byte {
	if i := bytes.IndexAny(b, "\r\n"); i >= 0 {
		return b[:i]
	}
	return b
}
