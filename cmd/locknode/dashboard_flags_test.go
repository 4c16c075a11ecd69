package main

import (
	flag "github.com/spf13/pflag"
	"io"
	"testing"
	"time"

	"github.com/locknode/locknode/cluster"
)

func TestDashboardFlags(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr bool
		keys    int
		entries int
		window  time.Duration
	}{
		{"defaults", nil, false, cluster.DefaultHistoryKeys, cluster.DefaultHistoryEntries, cluster.DefaultActivityWindow},
		{"set", []string{"--history-keys", "10", "--history-entries", "3", "--activity-window", "1m"}, false, 10, 3, time.Minute},
		{"history off", []string{"--history-keys", "0"}, false, -1, cluster.DefaultHistoryEntries, cluster.DefaultActivityWindow},
		{"negative keys", []string{"--history-keys", "-5"}, true, 0, 0, 0},
		{"no entries", []string{"--history-entries", "0"}, true, 0, 0, 0},
		{"too many entries", []string{"--history-entries", "1001"}, true, 0, 0, 0},
		{"window too short", []string{"--activity-window", "500ms"}, true, 0, 0, 0},
		{"window too long", []string{"--activity-window", "2h"}, true, 0, 0, 0},
		{"not a number", []string{"--history-keys", "many"}, true, 0, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := flag.NewFlagSet("serve", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			d := addDashboardFlags(fs)
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			c := cluster.DefaultConfig()
			err := d.apply(&c)
			if (err != nil) != tt.wantErr {
				t.Fatalf("error %v, want error %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if c.HistoryKeys != tt.keys || c.HistoryEntries != tt.entries || c.ActivityWindow != tt.window {
				t.Fatalf("got %d keys, %d entries, window %v", c.HistoryKeys, c.HistoryEntries, c.ActivityWindow)
			}
		})
	}
}
