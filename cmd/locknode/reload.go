package main

import (
	"context"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/hashicorp/go-hclog"
)

// reloader re-reads one file a running node uses (users, certificates);
// serve calls every one of them on SIGHUP.
type reloader struct {
	name string
	fn   func() error
}

// reloadOnSIGHUP calls each reloader on every SIGHUP until ctx ends. A
// failed reload logs and keeps what was loaded before.
func reloadOnSIGHUP(ctx context.Context, log hclog.Logger, rs []reloader) {
	if len(rs) == 0 {
		return
	}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	// Ends when ctx ends (serve's shutdown).
	go func() {
		defer signal.Stop(hup)
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				for _, r := range rs {
					if err := r.fn(); err != nil {
						log.Error("reload failed; the previous version stays in force", "what", r.name, "error", err)
					} else {
						log.Info("reloaded", "what", r.name)
					}
				}
			}
		}
	}()
}

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
