package api

import (
	"fmt"
	"strings"
)

// ElectionKeyError refuses a plain lock request (acquire, release,
// extend) on an election's lock: the owner token of that lock is public
// (Inspect shows it), so the lock API would let anyone who can read it
// end or prolong a leadership behind its leader's back. Elections change
// only through the election API; an admin may still force-release the
// key, which ends the leadership visibly (the leader's Observe sees it).
func ElectionKeyError(keys ...string) error {
	for _, k := range keys {
		if strings.HasPrefix(k, ElectionPrefix) {
			return fmt.Errorf("%w: %q is the lock of election %q: use the election API (an admin may force-release it)",
				ErrForbidden, k, strings.TrimPrefix(k, ElectionPrefix))
		}
	}
	return nil
}
