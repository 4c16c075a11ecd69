package main

import (
	"io"
	"strings"
	"testing"
	"time"

	flag "github.com/spf13/pflag"

	"github.com/locknode/locknode/auth"
	"github.com/locknode/locknode/httpapi"
	"github.com/locknode/locknode/redisbridge"
	"github.com/locknode/locknode/transport"
)

func parseLimitArgs(t *testing.T, args ...string) (parsedLimits, error) {
	t.Helper()
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	n := addNetLimitFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return n.parse()
}

func TestNetLimitFlagDefaults(t *testing.T) {
	p, err := parseLimitArgs(t)
	if err != nil {
		t.Fatal(err)
	}
	h, r := p.HTTP, p.RESP
	switch {
	case h.MaxConns != httpapi.DefaultMaxConns, h.HeaderTimeout != httpapi.DefaultHeaderTimeout,
		h.BodyTimeout != httpapi.DefaultBodyTimeout, h.IdleTimeout != httpapi.DefaultIdleTimeout,
		h.MaxHeaderBytes != httpapi.DefaultMaxHeaderBytes, h.MaxBodyBytes != httpapi.DefaultMaxBodyBytes:
		t.Errorf("HTTP defaults differ from the package's: %+v", h)
	}
	d := redisbridge.DefaultConfig()
	switch {
	case r.MaxConns != d.MaxConns, r.IdleTimeout != d.IdleTimeout, r.MaxBulkBytes != d.MaxBulkBytes,
		r.MaxArgs != d.MaxArgs, r.MaxRequestBytes != d.MaxRequestBytes, r.PubSubHardLimit != d.PubSubHardLimit,
		r.PubSubSoftLimit != d.PubSubSoftLimit, r.PubSubSoftFor != d.PubSubSoftFor,
		r.TrackingTableMaxKeys != d.TrackingTableMaxKeys:
		t.Errorf("RESP defaults differ from the package's: %+v", r)
	}
	if h.MaxWatchers != httpapi.DefaultMaxWatchers {
		t.Errorf("--max-watchers default %d differs from the package's", h.MaxWatchers)
	}
	if h.MaxConnsPerAddr != httpapi.DefaultMaxConnsPerAddr || r.MaxConnsPerAddr != d.MaxConnsPerAddr || r.AuthTimeout != d.AuthTimeout {
		t.Errorf("per-address caps or auth timeout differ from the packages': %d %d %v", h.MaxConnsPerAddr, r.MaxConnsPerAddr, r.AuthTimeout)
	}
	if a := auth.NewThrottle(p.AuthThrottle).Config(); a.Delay != auth.DefaultFailDelay || a.MaxDelay != auth.DefaultFailMaxDelay ||
		a.Disconnect != auth.DefaultFailDisconnect || p.AuthThrottle.Delay != auth.DefaultFailDelay {
		t.Errorf("auth throttle defaults differ from the package's: %+v", p.AuthThrottle)
	}
	if p.PeerHandshakeTimeout != transport.DefaultHandshakeTimeout || p.PeerMaxConns != transport.DefaultMaxConns {
		t.Errorf("peer defaults differ from the package's: %v %d", p.PeerHandshakeTimeout, p.PeerMaxConns)
	}
}

func TestNetLimitFlags(t *testing.T) {
	cases := []struct {
		name  string
		args  []string
		env   map[string]string
		check func(parsedLimits) bool
		err   string // a part of the error; "" for none
	}{
		{"http", []string{"--http-max-conns", "5", "--http-body-timeout", "2s", "--http-max-body-bytes", "4KiB", "--http-max-header-bytes", "8192"}, nil,
			func(p parsedLimits) bool {
				return p.HTTP.MaxConns == 5 && p.HTTP.BodyTimeout == 2*time.Second && p.HTTP.MaxBodyBytes == 4096 && p.HTTP.MaxHeaderBytes == 8192
			}, ""},
		{"resp timeout and pubsub", []string{"--resp-timeout", "300s", "--resp-pubsub-limit", "1MiB,0,10"}, nil,
			func(p parsedLimits) bool {
				return p.RESP.IdleTimeout == 300*time.Second && p.RESP.PubSubHardLimit == 1<<20 && p.RESP.PubSubSoftLimit == -1
			}, ""},
		{"resp timeout 0 is never", []string{"--resp-timeout", "0"}, nil,
			func(p parsedLimits) bool { return p.RESP.IdleTimeout < 0 }, ""},
		{"env", nil, map[string]string{"LOCKNODE_RESP_MAX_CLIENTS": "7", "LOCKNODE_PEER_HANDSHAKE_TIMEOUT": "3s"},
			func(p parsedLimits) bool { return p.RESP.MaxConns == 7 && p.PeerHandshakeTimeout == 3*time.Second }, ""},
		{"flag wins over env", []string{"--peer-max-conns", "9"}, map[string]string{"LOCKNODE_PEER_MAX_CONNS": "7"},
			func(p parsedLimits) bool { return p.PeerMaxConns == 9 }, ""},
		{"zero conns", []string{"--http-max-conns", "0"}, nil, nil, "--http-max-conns"},
		{"bad duration", []string{"--http-header-timeout", "soon"}, nil, nil, "--http-header-timeout"},
		{"negative duration", []string{"--peer-handshake-timeout", "-1s"}, nil, nil, "--peer-handshake-timeout"},
		{"bad unit", []string{"--resp-max-bulk-len", "3 parsecs"}, nil, nil, "--resp-max-bulk-len"},
		{"bulk over 2 GiB", []string{"--resp-max-bulk-len", "3GiB"}, nil, nil, "--resp-max-bulk-len"},
		{"pubsub needs three", []string{"--resp-pubsub-limit", "32MiB 8MiB"}, nil, nil, "--resp-pubsub-limit"},
		{"too few args", []string{"--resp-max-multibulk-len", "3"}, nil, nil, "--resp-max-multibulk-len"},
		{"tracking table", nil, map[string]string{"LOCKNODE_RESP_TRACKING_TABLE_MAX_KEYS": "1000"},
			func(p parsedLimits) bool { return p.RESP.TrackingTableMaxKeys == 1000 }, ""},
		{"tracking table zero", []string{"--resp-tracking-table-max-keys", "0"}, nil, nil, "--resp-tracking-table-max-keys"},
		{"keyspace notifications", nil, map[string]string{"LOCKNODE_RESP_NOTIFY_KEYSPACE_EVENTS": "Kgx"},
			func(p parsedLimits) bool { return p.RESP.NotifyKeyspaceEvents == "Kgx" }, ""},
		{"keyspace notifications bad letter", []string{"--resp-notify-keyspace-events", "KEq"}, nil, nil, "--resp-notify-keyspace-events"},
		{"per-address caps", []string{"--http-max-conns-per-addr", "5", "--resp-max-clients-per-addr", "0"}, nil,
			func(p parsedLimits) bool { return p.HTTP.MaxConnsPerAddr == 5 && p.RESP.MaxConnsPerAddr < 0 }, ""},
		{"per-address env", nil, map[string]string{"LOCKNODE_RESP_MAX_CLIENTS_PER_ADDR": "3", "LOCKNODE_HTTP_MAX_CONNS_PER_ADDR": "4"},
			func(p parsedLimits) bool { return p.RESP.MaxConnsPerAddr == 3 && p.HTTP.MaxConnsPerAddr == 4 }, ""},
		{"bad per-address cap", []string{"--http-max-conns-per-addr", "-2"}, nil, nil, "--http-max-conns-per-addr"},
		{"max watchers", nil, map[string]string{"LOCKNODE_MAX_WATCHERS": "50"},
			func(p parsedLimits) bool { return p.HTTP.MaxWatchers == 50 }, ""},
		{"max watchers 0 is none", []string{"--max-watchers", "0"}, nil,
			func(p parsedLimits) bool { return p.HTTP.MaxWatchers < 0 }, ""},
		{"bad max watchers", []string{"--max-watchers", "many"}, nil, nil, "--max-watchers"},
		{"auth timeout", []string{"--resp-auth-timeout", "3s"}, nil,
			func(p parsedLimits) bool { return p.RESP.AuthTimeout == 3*time.Second }, ""},
		{"auth timeout 0 is never", nil, map[string]string{"LOCKNODE_RESP_AUTH_TIMEOUT": "0"},
			func(p parsedLimits) bool { return p.RESP.AuthTimeout < 0 }, ""},
		{"auth throttle", []string{"--auth-fail-delay", "50ms", "--auth-fail-max-delay", "1s", "--auth-fail-disconnect", "5"}, nil,
			func(p parsedLimits) bool {
				a := p.AuthThrottle
				return a.Delay == 50*time.Millisecond && a.MaxDelay == time.Second && a.Disconnect == 5
			}, ""},
		{"auth throttle env, never disconnect", nil, map[string]string{"LOCKNODE_AUTH_FAIL_DISCONNECT": "0", "LOCKNODE_AUTH_FAIL_DELAY": "1s", "LOCKNODE_AUTH_FAIL_MAX_DELAY": "4s"},
			func(p parsedLimits) bool {
				a := p.AuthThrottle
				return a.Disconnect < 0 && a.Delay == time.Second && a.MaxDelay == 4*time.Second
			}, ""},
		{"max delay below delay", []string{"--auth-fail-delay", "3s"}, nil, nil, "--auth-fail-max-delay"},
		{"zero delay", []string{"--auth-fail-delay", "0"}, nil, nil, "--auth-fail-delay"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			p, err := parseLimitArgs(t, c.args...)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want one naming %s", err, c.err)
				}
				return
			}
			if err != nil || !c.check(p) {
				t.Fatalf("got %+v, %v", p, err)
			}
		})
	}
}
