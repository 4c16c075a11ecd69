package main

import (
	"net"
)

// beyondLoopback reports whether a listen address accepts connections
// from other machines (a wildcard or a non-loopback host).
func beyondLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return true
	}
	if host == "localhost" {
		return false
	}
	ip := net.ParseIP(host)
	return ip == nil || !ip.IsLoopback()
}
