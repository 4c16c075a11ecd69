package main

import (
	"fmt"
	"strconv"
	"time"

	flag "github.com/spf13/pflag"

	"github.com/locknode/locknode/cluster"
)

// dashboardFlags bound the dashboard's node-local memory: the lock
// history ring and the activity samples (cluster.Config).
type dashboardFlags struct {
	keys, entries, window *string
}

func addDashboardFlags(fs *flag.FlagSet) *dashboardFlags {
	return &dashboardFlags{
		keys: fs.String("history-keys", envDefault("LOCKNODE_HISTORY_KEYS", strconv.Itoa(cluster.DefaultHistoryKeys)),
			"keys whose recent grants this node keeps in memory for the dashboard and GET /v1/locks/{key}/history; the key granted least recently is forgotten past it (0: no history)"),
		entries: fs.String("history-entries", envDefault("LOCKNODE_HISTORY_ENTRIES", strconv.Itoa(cluster.DefaultHistoryEntries)),
			fmt.Sprintf("grants kept per key in the lock history, oldest dropped first (1 to %d)", cluster.MaxHistoryEntries)),
		window: fs.String("activity-window", envDefault("LOCKNODE_ACTIVITY_WINDOW", cluster.DefaultActivityWindow.String()),
			fmt.Sprintf("how far back the dashboard's per-second activity samples go (1s to %v)", cluster.MaxActivityWindow)),
	}
}

// apply sets the bounds into c, or says which flag is wrong; c.Validate
// checks the ranges.
func (d *dashboardFlags) apply(c *cluster.Config) error {
	keys, err := strconv.Atoi(*d.keys)
	if err != nil || keys < 0 {
		return fmt.Errorf("--history-keys: %q is not a non-negative integer", *d.keys)
	}
	entries, err := strconv.Atoi(*d.entries)
	if err != nil || entries < 1 || entries > cluster.MaxHistoryEntries {
		return fmt.Errorf("--history-entries: %q is not an integer from 1 to %d", *d.entries, cluster.MaxHistoryEntries)
	}
	window, err := time.ParseDuration(*d.window)
	if err != nil || window < time.Second || window > cluster.MaxActivityWindow {
		return fmt.Errorf("--activity-window: %q is not a duration from 1s to %v", *d.window, cluster.MaxActivityWindow)
	}
	if keys <= 0 {
		keys = -1 // cluster.Config: negative keeps no history, 0 is the default
	}
	c.HistoryKeys, c.HistoryEntries, c.ActivityWindow = keys, entries, window
	return nil
}
