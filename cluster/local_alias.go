package cluster

import "github.com/locknode/locknode/cluster/lockservice"

// Local is the lock service over a single in-process table
// (lockservice.Local): the same lock semantics as a Node without raft.
// It lives in cluster/lockservice, which links no raft; these names
// keep cluster.Local working.
type (
	Local       = lockservice.Local
	LocalConfig = lockservice.LocalConfig
)

// NewLocal returns a running Local with an empty table
// (lockservice.NewLocal).
func NewLocal(cfg LocalConfig) (*Local, error) { return lockservice.NewLocal(cfg) }
