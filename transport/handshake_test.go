package transport

import (
	"context"
	"io"
	"net"
	"testing"
	"time"
)

// TestSilentConnectionsAreClosed: an accepted connection that sends
// nothing, only its type byte, or less than a whole first request is
// closed once HandshakeTimeout has passed; the node still serves.
func TestSilentConnectionsAreClosed(t *testing.T) {
	const timeout = 300 * time.Millisecond
	srv := newTransport(t, func(c *Config) { c.HandshakeTimeout = timeout })
	srv.Serve(echo)
	// raft's side of the accepted raft connections: read until failure.
	// Ends when the raft layer closes (Transport.Close in cleanup).
	go func() {
		for {
			c, err := srv.RaftStreamLayer().Accept()
			if err != nil {
				return
			}
			// Ends when the connection fails (its deadline) or closes.
			go func() {
				defer c.Close()
				io.Copy(io.Discard, c)
			}()
		}
	}()
	cases := []struct {
		name string
		in   []byte
	}{
		{"nothing", nil},
		{"rpc type byte only", []byte{typeRPC}},
		{"part of an rpc frame header", []byte{typeRPC, 0, 0, 0}},
		{"rpc frame without its body", append([]byte{typeRPC}, appendFrame(nil, kindRequest, 1, []byte("body"))[:frameHeader+1]...)},
		{"raft type byte only", []byte{typeRaft}},
		{"part of a raft request", []byte{typeRaft, 0, 0x85}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := net.Dial("tcp", srv.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			start := time.Now()
			if _, err := c.Write(tc.in); err != nil {
				t.Fatal(err)
			}
			expectDropped(t, c)
			if d := time.Since(start); d < timeout/2 {
				t.Fatalf("dropped after %v, before the handshake timeout %v", d, timeout)
			}
		})
	}
	cli := newTransport(t, nil)
	if got, err := cli.Call(context.Background(), srv.Addr().String(), []byte("still up")); err != nil || string(got) != "echo:still up" {
		t.Fatalf("server unusable after silent connections: %q, %v", got, err)
	}
}

// TestIdleConnectionAfterFirstRequestStaysOpen: the deadline ends with
// the first request; a pooled connection may then idle for longer.
func TestIdleConnectionAfterFirstRequestStaysOpen(t *testing.T) {
	const timeout = 200 * time.Millisecond
	ln := newListener(t)
	srv := newTransport(t, func(c *Config) { c.Listener = ln; c.HandshakeTimeout = timeout })
	srv.Serve(echo)
	cli := newTransport(t, nil)
	call := func() {
		t.Helper()
		if got, err := cli.Call(context.Background(), srv.Addr().String(), []byte("x")); err != nil || string(got) != "echo:x" {
			t.Fatalf("call: %q, %v", got, err)
		}
	}
	call()
	accepted := ln.n.Load()
	time.Sleep(3 * timeout) // idle past the handshake timeout: what is tested is that nothing happens
	call()
	if n := ln.n.Load(); n != accepted {
		t.Fatalf("the idle connection was closed: %d accepts, %d before", n, accepted)
	}
}

// TestPeerConnectionCap: past MaxConns accepted connections, a new one is
// closed at once; once one closes, calls get through again.
func TestPeerConnectionCap(t *testing.T) {
	srv := newTransport(t, func(c *Config) { c.MaxConns = 2; c.HandshakeTimeout = time.Minute })
	srv.Serve(echo)
	held := make([]net.Conn, 2)
	for i := range held {
		c, err := net.Dial("tcp", srv.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		held[i] = c
	}
	waitFor(t, 5*time.Second, "two accepted connections", func() bool {
		srv.mu.Lock()
		defer srv.mu.Unlock()
		return len(srv.in) == 2
	})
	over, err := net.Dial("tcp", srv.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer over.Close()
	start := time.Now()
	expectDropped(t, over)
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("the connection over the cap was dropped only after %v", d)
	}
	held[0].Close()
	cli := newTransport(t, nil)
	waitFor(t, 10*time.Second, "a call once a slot is free", func() bool {
		got, err := cli.Call(context.Background(), srv.Addr().String(), []byte("y"))
		return err == nil && string(got) == "echo:y"
	})
}
