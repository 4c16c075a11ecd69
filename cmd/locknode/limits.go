package main

import (
	"fmt"
	"strconv"
	"time"

	flag "github.com/spf13/pflag"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/fsm"
)

// limitFlags are the request limits of `serve` and `dev`. They are part
// of the state machine's determinism: every node of a cluster must run
// with the same values.
type limitFlags struct {
	maxTTL, maxPermits *string
}

func addLimitFlags(fs *flag.FlagSet) *limitFlags {
	d := api.DefaultLimits()
	return &limitFlags{
		maxTTL: fs.String("max-ttl", envDefault("LOCKNODE_MAX_TTL", (time.Duration(d.MaxTTLMs)*time.Millisecond).String()),
			"longest lease, wait, lock-delay and max hold a request may ask for (whole ms); set the same on every node"),
		maxPermits: fs.String("max-permits", envDefault("LOCKNODE_MAX_PERMITS", strconv.Itoa(d.MaxPermits)),
			"largest semaphore a request may ask for; set the same on every node"),
	}
}

// apply sets the limits into c, or says which flag is wrong.
func (l *limitFlags) apply(c *fsm.Config) error {
	ttl, err := time.ParseDuration(*l.maxTTL)
	switch {
	case err != nil:
		return fmt.Errorf("--max-ttl: %w", err)
	case ttl < time.Millisecond || ttl%time.Millisecond != 0:
		return fmt.Errorf("--max-ttl: %v is not a whole number of milliseconds of at least 1ms", ttl)
	}
	permits, err := strconv.Atoi(*l.maxPermits)
	if err != nil || permits < 1 {
		return fmt.Errorf("--max-permits: %q is not a positive integer", *l.maxPermits)
	}
	c.MaxTTL, c.MaxPermits = ttl.Milliseconds(), permits
	return nil
}
