package cluster

import (
	"reflect"
	"time"

	"github.com/hashicorp/raft"
)

// commitPush reports whether the raft linked in is locknode's fork, whose
// leader tells followers of a commit at once (third_party/raft FORK.md).
// cluster builds against upstream raft too, so it cannot name anything
// only the fork has; the fork marks itself with a field instead.
var commitPush = func() bool {
	_, ok := reflect.TypeOf((*raft.Raft)(nil)).Elem().FieldByName("locknodeCommitPush")
	return ok
}()

// defaultCommitTimeout is Config.CommitTimeout's default: long where
// followers are told of commits at once, short where the resend is how
// they learn them.
func defaultCommitTimeout() time.Duration {
	if commitPush {
		return 50 * time.Millisecond
	}
	return 2 * time.Millisecond
}
