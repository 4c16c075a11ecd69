package main

import (
	"fmt"
	"strconv"
	"time"

	flag "github.com/spf13/pflag"

	"github.com/locknode/locknode/cluster"
)

// readyFlags bound how far behind the leader a node may be and still
// answer /readyz with 200 (cluster.Config.ReadyMaxLagEntries,
// ReadyMaxLag).
type readyFlags struct {
	entries, lag *string
}

func addReadyFlags(fs *flag.FlagSet) *readyFlags {
	return &readyFlags{
		entries: fs.String("ready-max-lag-entries", envDefault("LOCKNODE_READY_MAX_LAG_ENTRIES", strconv.Itoa(cluster.DefaultReadyMaxLagEntries)),
			"/readyz answers 503 while this node is more than this many entries behind the leader's commit index"),
		lag: fs.String("ready-max-lag", envDefault("LOCKNODE_READY_MAX_LAG", cluster.DefaultReadyMaxLag.String()),
			"/readyz answers 503 when this node does not learn the leader's commit index and apply up to it within this long, or a write to its raft log failed within this long"),
	}
}

// apply sets the bounds into c, or says which flag is wrong.
func (r *readyFlags) apply(c *cluster.Config) error {
	entries, err := strconv.ParseUint(*r.entries, 10, 64)
	if err != nil || entries < 1 {
		return fmt.Errorf("--ready-max-lag-entries: %q is not a whole number of at least 1", *r.entries)
	}
	lag, err := time.ParseDuration(*r.lag)
	if err != nil || lag < 10*time.Millisecond {
		return fmt.Errorf("--ready-max-lag: %q is not a duration of at least 10ms", *r.lag)
	}
	c.ReadyMaxLagEntries, c.ReadyMaxLag = entries, lag
	return nil
}
