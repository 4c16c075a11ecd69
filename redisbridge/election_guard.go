package redisbridge

import (
	"strings"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/auth"
)

// msgElectionKey refuses a write to an election's lock through a Redis
// command (api.ElectionKeyError says why); NOPERM, as a permission error.
const msgElectionKey = "NOPERM election keys change only through the election API; an admin may DEL one to end its leadership"

// electionRefusal returns the error text that refuses args because they
// write an election's lock (api.ElectionPrefix), or "". Reads pass; the
// one write allowed is a forced release (DEL, UNLINK, LOCK.RELEASE ...
// FORCE) by a user with admin (anyone without users configured), which
// the leader's Observe sees, closing its Leadership.Done. Everything else
// — SET, PEXPIRE, LOCK.*, scripts declaring the key, a release by the
// owner token that GET shows — would end or prolong a leadership behind
// its leader's back.
func (ca *connACL) electionRefusal(cmd *command, name string, args [][]byte) string {
	named := false // the common case, without working out the key positions
	for _, a := range args[1:] {
		if len(a) >= len(api.ElectionPrefix) && string(a[:len(api.ElectionPrefix)]) == api.ElectionPrefix {
			named = true
			break
		}
	}
	if !named {
		return ""
	}
	a := accessOf(cmd, name, args)
	if a.cat == 0 || a.cat == auth.Read {
		return ""
	}
	touches := false
	for _, k := range a.keys {
		if strings.HasPrefix(string(k), api.ElectionPrefix) {
			touches = true
			break
		}
	}
	if !touches {
		return ""
	}
	forced := name == "del" || name == "unlink" || (name == "lock.release" && a.cat == auth.Admin)
	if forced && !ca.noForce() {
		return ""
	}
	return msgElectionKey
}
