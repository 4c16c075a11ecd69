package api

// How a hold in a lock's history ended (HistoryEntry.End).
const (
	EndHeld    = "held"    // not ended yet
	EndRelease = "release" // its owner released it
	EndExpiry  = "expiry"  // its TTL or max hold ran out
	EndForced  = "forced"  // an administrator (or a Redis DEL/overwrite) ended it
	EndSession = "session" // its session expired or was closed
)

// History is one lock's recent grants as one node saw them applied, newest
// first (GET /v1/locks/{key}/history). It is kept in memory per node and
// bounded, so it starts empty after a restart and drops the oldest grants
// and least recently changed keys first.
type History struct {
	Key     string         `json:"key"`
	Entries []HistoryEntry `json:"entries"`
}

// HistoryEntry is one grant of a lock and how it ended.
type HistoryEntry struct {
	Owner     string `json:"owner"`
	Mode      string `json:"mode"`
	Fence     uint64 `json:"fence"`
	GrantedMs int64  `json:"granted_ms"` // cluster time (unix ms) of the grant
	EndedMs   int64  `json:"ended_ms"`   // cluster time it ended; 0 while held
	End       string `json:"end"`        // EndHeld, EndRelease, EndExpiry, EndForced, EndSession
	// Meta is the holder's metadata given at acquire, when the node
	// recorded it.
	Meta map[string]string `json:"meta,omitempty"`
}

// ActivitySample counts what one node applied during one second of its
// wall clock (GET /v1/ui/activity).
type ActivitySample struct {
	UnixSec  int64 `json:"t"`
	Grants   int   `json:"grants"`
	Releases int   `json:"releases"`
	Expiries int   `json:"expiries"` // TTL, max hold or session ended the hold
	Forced   int   `json:"forced"`
	// Contended counts acquires that found the lock taken and queued.
	Contended int `json:"contended"`
	// WaitP99Ms is the 99th percentile of the queue waits that ended in a
	// grant during the second, as the upper edge of its bucket
	// (WaitBucketEdgesMs; the last edge for the open bucket past it); 0
	// when none did.
	WaitP99Ms int64 `json:"wait_p99_ms"`
	// WaitP99Bucket is that bucket's index in Activity.WaitBuckets,
	// meaningful when WaitP99Ms is not 0.
	WaitP99Bucket int `json:"wait_p99_bucket"`
}

// Activity is a node's recent per-second samples, oldest first.
type Activity struct {
	Node    string           `json:"node"`
	Samples []ActivitySample `json:"samples"`
	// WaitBuckets names the wait buckets as ranges ("10–25 ms",
	// "> 10 s"), in order: the wait chart's axis.
	WaitBuckets []string `json:"wait_buckets"`
}

// NodeView is one member as the dashboard shows it (GET /v1/ui/cluster):
// its own GET /v1/status answer, or why there is none.
type NodeView struct {
	ID       string  `json:"id"`
	HTTPAddr string  `json:"http_addr,omitempty"`
	Self     bool    `json:"self,omitempty"` // the node that answered
	Status   *Status `json:"status,omitempty"`
	Error    string  `json:"error,omitempty"`
}

// ClusterView is every member's status as one node gathered it.
type ClusterView struct {
	Node  string     `json:"node"`
	Nodes []NodeView `json:"nodes"`
}

// PeerAddr is a member and the address of its HTTP API, as the cluster
// reported it; HTTP is empty when the member never answered.
type PeerAddr struct {
	ID   string
	HTTP string
	Self bool
}

// ForceReleaseRequest is the dashboard's administrative release of
// whoever holds Key (POST /v1/ui/force-release); Reason goes to the audit
// log.
type ForceReleaseRequest struct {
	Key    string `json:"key"`
	Reason string `json:"reason"`
}

// Validate checks a forced release against l: a reason is required,
// bounded like an owner token, and printable (it is written to the audit
// log).
func (r *ForceReleaseRequest) Validate(l Limits) error {
	if err := l.CheckKey(r.Key); err != nil {
		return err
	}
	if err := l.checkToken("reason", r.Reason, true); err != nil {
		return err
	}
	for _, c := range r.Reason {
		if c < ' ' || c == 0x7f {
			return badRequest("reason contains a control character")
		}
	}
	return nil
}

// AgeList is one page of held locks ordered by the age of their oldest
// hold (GET /v1/ui/locks-by-age).
type AgeList struct {
	Locks  []LockInfo `json:"locks"`
	Total  int        `json:"total"`  // held locks that match, in all pages
	Offset int        `json:"offset"` // of Locks[0] in the whole order
}
