package main

import (
	"io"
	"testing"
	"time"

	flag "github.com/spf13/pflag"

	"github.com/locknode/locknode/cluster"
)

func TestReadyFlags(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr bool
		entries uint64
		lag     time.Duration
	}{
		{"defaults", nil, false, cluster.DefaultReadyMaxLagEntries, cluster.DefaultReadyMaxLag},
		{"set", []string{"--ready-max-lag-entries", "100", "--ready-max-lag", "3s"}, false, 100, 3 * time.Second},
		{"zero entries", []string{"--ready-max-lag-entries", "0"}, true, 0, 0},
		{"negative entries", []string{"--ready-max-lag-entries", "-1"}, true, 0, 0},
		{"lag not a duration", []string{"--ready-max-lag", "soon"}, true, 0, 0},
		{"lag too short", []string{"--ready-max-lag", "1ms"}, true, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := flag.NewFlagSet("serve", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			r := addReadyFlags(fs)
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			c := cluster.DefaultConfig()
			err := r.apply(&c)
			if (err != nil) != tt.wantErr {
				t.Fatalf("error %v, want error %v", err, tt.wantErr)
			}
			if err == nil && (c.ReadyMaxLagEntries != tt.entries || c.ReadyMaxLag != tt.lag) {
				t.Fatalf("got %d entries, %v", c.ReadyMaxLagEntries, c.ReadyMaxLag)
			}
		})
	}
	// serve refuses a bad value from the environment, before starting.
	t.Setenv("LOCKNODE_READY_MAX_LAG", "never")
	if code := run([]string{"serve", "--id", "a", "--data", t.TempDir()}, io.Discard, io.Discard); code != 2 {
		t.Fatalf("LOCKNODE_READY_MAX_LAG=never: exit %d, want 2", code)
	}
}
