package httpapi

import "github.com/locknode/locknode/api"

// Wire types of the routes whose bodies are not api types. The client
// package uses them too, so both sides agree on the field names.

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
	PathReadyz     = "/readyz" // readiness probe: Config.Ready, else a leader is known

	// ContentTypeJSON is the type of every JSON body; observe streams
	// ContentTypeNDJSON (one JSON document per line).
	ContentTypeJSON   = "application/json"
	ContentTypeNDJSON = "application/x-ndjson"
)

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
