//go:build !locknode_next

package fsm

// The cluster versions this binary runs. Version 1 is the behaviour of
// the first release with cluster versions; version 2 lets a follower
// forward a command with its trace context (a peer RPC kind: the table
// decides nothing differently); version 3 lets nodes send raft's RPCs in
// the lean framing (transport.LeanRaft; the table decides nothing
// differently) and lets the leader write many renewals in one entry
// (OpBatchRenew, VersionBatchRenew); version 4 bounds the due work of
// one entry (VersionBoundedExpiry, expiry_bound.go) and runs Redisson's
// watchdog renewal natively, as a batched renewal (VersionRedissonRenew,
// redis_script.go). docs/UPGRADING.md
// says which releases run which versions.
const (
	MinClusterVersion = 1
	// nextBuild: the synthetic next release (build tag locknode_next).
	nextBuild         = false
	MaxClusterVersion = 4
)

// snapFormat is the snapshot format this table writes: the newest one
// the active version allows.
func (t *Table) snapFormat() byte { return snapVersion }

// maxSnapFormat is the newest snapshot format this binary reads.
const maxSnapFormat = snapVersion

// nextState is empty: the synthetic next version is built only with the
// locknode_next tag (version_next.go), and these hooks do nothing.
type nextState struct{}

func (t *Table) applyNext(*applyCtx, *Command) (Result, bool) { return Result{}, false }

func (t *Table) encodeNext(*enc)                  {}
func (n *Table) restoreNext(*snapReader) error    { return nil }
func (t *Table) adoptNext(n *Table)               { t.next = n.next }
func (t *Table) resetNext()                       { t.next = nextState{} }
func (t *keySpace) sessionTTLRefused(int64) error { return nil }
