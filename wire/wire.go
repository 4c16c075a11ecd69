package wire

import "github.com/locknode/locknode/api"

// Wire types of the routes whose bodies are not api types. The client
// and the server both use them, so both sides agree on the field names.

// Route paths and prefixes. Paths with a {placeholder} are built by the
// client with the escaped name in its place.
const (
	PathAcquire    = "/v1/locks/acquire"
	PathTry        = "/v1/locks/try"
	PathRelease    = "/v1/locks/release"
	PathExtend     = "/v1/locks/extend"
	PathLocks      = "/v1/locks"  // GET: list
	PathLockPrefix = "/v1/locks/" // GET + escaped key: inspect
	PathSessions   = "/v1/sessions"
	PathElections  = "/v1/elections/"
	PathFenceCheck = "/v1/fence/check"
	PathStatus     = "/v1/status"
	PathMembers    = "/v1/members"
	PathMetrics    = "/metrics"
	PathLivez      = "/livez"  // liveness probe: the process serves
	PathReadyz     = "/readyz" // readiness probe: the server's Ready check, else a leader is known

	// ContentTypeJSON is the type of every JSON body; observe streams
	// ContentTypeNDJSON (one JSON document per line).
	ContentTypeJSON   = "application/json"
	ContentTypeNDJSON = "application/x-ndjson"
)

// PathSnapshot streams a consistent snapshot of the whole table (admin
// only): the backup `locknode snapshot save` writes and `locknode
// snapshot restore` starts a new cluster from.
const PathSnapshot = "/v1/snapshot"

// HeaderIndex is the answer header that carries the change index of a
// lock read (api.LockInfo.Index, api.ListResult.Index); a blocking query
// sends it back as ?index=.
const HeaderIndex = "X-Locknode-Index"

// HeaderSnapshotIndex is the response header of GET /v1/snapshot that
// carries the applied index the snapshot was taken at.
const HeaderSnapshotIndex = "Locknode-Snapshot-Index"

// HeaderSnapshotTerm is the response header of GET /v1/snapshot that
// carries the raft term of the entry at the snapshot's index, when the
// node knows it (absent from a node without raft, or an older one).
const HeaderSnapshotTerm = "Locknode-Snapshot-Term"

// TrailerSnapshotSHA256 is the HTTP trailer of GET /v1/snapshot: the
// SHA-256 (hex) of the stream's bytes, computed by the node as it sent
// them, so that a client can tell a stream damaged on the way from a
// whole one. It is sent only after the last byte of a whole stream.
const TrailerSnapshotSHA256 = "Locknode-Snapshot-Sha256"

// PathTransferLeader is POST: api.TransferRequest -> api.TransferResult.
// Only the leader takes it; a follower answers 503 naming the leader.
const PathTransferLeader = PathMembers + "/transfer-leader"

// PathClusterUpgrade activates the highest cluster version every member
// runs (admin only; docs/UPGRADING.md): POST -> api.UpgradeResult. A
// member that does not answer makes it fail with 409 (api.ErrConflict)
// and changes nothing.
const PathClusterUpgrade = "/v1/cluster/upgrade"

// PathOpenAPI serves the OpenAPI 3.1 document of this API (public, like
// the probes: it is the same in every binary).
const PathOpenAPI = "/v1/openapi.json"

// Dashboard routes.
const (
	PathUI           = "/ui/"
	PathHistory      = "/history"             // after PathLockPrefix + escaped key
	PathActivity     = "/v1/ui/activity"      // GET: api.Activity
	PathClusterView  = "/v1/ui/cluster"       // GET: api.ClusterView
	PathForceRelease = "/v1/ui/force-release" // POST api.ForceReleaseRequest: admin
	HeaderUI         = "X-Locknode-Dashboard" // set by the page: answer 401 without a browser login prompt
)

// PathUILocks is the dashboard's lock listing: GET
// ?prefix=&state=&owner=&meta=&order=&offset=&limit=&stale= →
// api.LockPage, one page of the locks that match with the totals of all
// of them. state is one of api.LockStates; owner an exact holder owner;
// meta (repeatable) "name=value" or "name", all on one holder; order
// key (default), oldest or newest (age of the oldest hold, free locks
// last).
const PathUILocks = "/v1/ui/locks"

// PathLocksByAge lists held locks ordered by the age of their oldest
// hold: GET ?prefix=&order=oldest|newest&offset=&limit=&stale= →
// api.AgeList. The dashboard's listing (PathUILocks) does this and more;
// this route stays for the callers that use it.
const PathLocksByAge = "/v1/ui/locks-by-age"

// SessionRequest opens a session (POST /v1/sessions).
type SessionRequest = api.SessionRequest

// CampaignRequest runs for leader (POST /v1/elections/{name}/campaign).
type CampaignRequest struct {
	Value   string `json:"value"`
	Session string `json:"session"`
	// Token is the campaign's secret; empty lets the server choose one.
	// The answer's token is the one to resign or proclaim with.
	Token string `json:"token,omitempty"`
}

// ResignRequest steps down (POST /v1/elections/{name}/resign): the
// leadership's value and the token its campaign returned.
type ResignRequest struct {
	Value string `json:"value"`
	Token string `json:"token"`
}

// ProclaimRequest changes a leader's value, keeping its leadership and
// fence (POST /v1/elections/{name}/proclaim -> Leader).
type ProclaimRequest struct {
	Value    string `json:"value"`
	Token    string `json:"token"`
	NewValue string `json:"new_value"`
}

// FenceCheckRequest is CheckAndAdvance (POST /v1/fence/check).
type FenceCheckRequest = api.FenceCheckRequest

// MemberRequest adds a voter (POST /v1/members).
type MemberRequest struct {
	ID      string `json:"id"`
	Address string `json:"address"` // raft address
	// Force skips the leader's check that Address answers the peer
	// handshake (a member not up yet); only the leader takes it: another
	// node answers 503, which the Go client retries on its next endpoint.
	Force bool `json:"force,omitempty"`
}
