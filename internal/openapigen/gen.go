package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strconv"
	"strings"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/auth"
	"github.com/locknode/locknode/wire"
)

// param is a path or query parameter.
type param struct {
	name, in, typ, desc string
}

// answer is one documented answer of an operation.
type answer struct {
	status int
	desc   string
	body   any    // a value of the JSON body's Go type; nil: none
	ctype  string // content type of a non-JSON body
	header map[string]string
}

// op is one operation: a method on a path.
type op struct {
	method, path, id, tag, summary, desc string
	public                               bool          // no credentials needed
	perm                                 auth.Category // the category a user needs (httpapi's route table; tested)
	params                               []param
	req                                  any // a value of the request body's Go type (its example); nil: no body
	answers                              []answer
}

const jsonType = wire.ContentTypeJSON

// The shared parameters.
var (
	pKey = param{"key", "path", "string", "The lock's key, percent-encoded. A \"/\" in the key may be sent as %2F (always " +
		"unambiguous; the Go client escapes every key this way) or raw. A path whose last raw segment is \"history\" asks that " +
		"key's history, so inspect a key whose last segment is \"history\" with the slash before it escaped (a%2Fhistory). " +
		"Raw segments that are empty, \".\" or \"..\" are refused (400), because clients and proxies rewrite them: escape the " +
		"slashes around them (a%2F%2Fb) or the dots (%2E). A \"%\" in a key is sent as %25."}
	pStale    = param{"stale", "query", "boolean", "true: answer from this node's state without confirming its leadership: fast, possibly out of date. Default false (linearizable)."}
	pSession  = param{"id", "path", "string", "The session's id, percent-encoded as one path segment."}
	pElection = param{"name", "path", "string", "The election's name, percent-encoded as one path segment (a \"/\" as %2F). Its lock is the key election/{name}: key patterns and permissions apply to that key."}
	pMember   = param{"id", "path", "string", "The member's id."}
	pPrefix   = param{"prefix", "query", "string", "Only keys that start with this."}
	pIndex    = param{"index", "query", "integer", "A blocking query: wait until the index of the last change (the " + wire.HeaderIndex + " of an earlier answer) is above this, " +
		"or wait passes, then answer the current state. 0 waits for the first change. A watcher may wake without a change, never miss one. " +
		"Past --max-watchers waiting on the node: 503 too_many_watchers."}
	pWait = param{"wait", "query", "string", "With index: the longest wait, a duration such as 30s or 5m (default 5m, at most 10m); the node adds up to 1/16 of it at random."}
)

// The examples and answers the operations share.
var (
	lease       = api.Lease{Key: "jobs/nightly", Owner: "worker-1", Fence: 7, TTLMs: 30000, Deadline: 1767225630000}
	acq         = api.AcquireRequest{Key: "jobs/nightly", Owner: "worker-1", TTLMs: 30000, WaitMs: 10000, RequestID: "4f1c2a", Meta: map[string]string{"host": "build-3"}}
	holder      = api.Holder{Owner: "worker-1", Mode: api.ModeExclusive, Count: 1, Fence: 7, TTLMs: 29000, Deadline: 1767225630000, GrantedMs: 1767225600000, Meta: map[string]string{"host": "build-3"}}
	info        = api.LockInfo{Key: "jobs/nightly", Kind: "lock", Fence: 7, Holders: []api.Holder{holder}, Waiters: []api.Waiter{}, TTLMs: -1, AppliedIndex: 42, State: api.StateHeld, Index: 40}
	indexHeader = map[string]string{wire.HeaderIndex: "The index of the last change of what the answer shows, as this node knows it (a 404 of a free key carries it too)."}
	leader      = api.Leader{Election: "scheduler", Value: "host-a:8080", Fence: 3, Token: "c0ffee"}
	status      = api.Status{ID: "n1", Leader: "n1", LeaderAddr: "10.0.0.1:7701", State: "Leader", Term: 2, AppliedIndex: 42, CommitIndex: 42,
		Members:   []api.Member{{ID: "n1", Address: "10.0.0.1:7701", Suffrage: "Voter", Leader: true}, {ID: "n2", Address: "10.0.0.2:7701", Suffrage: "Voter", LastContactMs: &lastContact}},
		FSMTimeMs: 1767225600000, Locks: 1, Keys: 1, HTTPAddr: "10.0.0.1:7700", RESPAddr: "10.0.0.1:6379", ClusterVersion: 1, ClusterVersions: "1..1"}
	lastContact = int64(12)
	none        = answer{status: 204, desc: "Done."}
)

// errs returns the error answers of the given statuses.
func errs(codes ...int) []answer {
	var out []answer
	for _, c := range codes {
		out = append(out, answer{status: c})
	}
	return out
}

// ok returns the 200 answer with body, described by desc.
func ok(body any, desc string) answer { return answer{status: 200, desc: desc, body: body} }

// ops lists every operation, in the order the document is checked in.
func ops() []op {
	var out []op
	for _, group := range [][]op{lockOps(), sessionOps(), electionOps(), fenceOps(), nodeOps(), adminOps(), dashboardOps()} {
		out = append(out, group...)
	}
	return out
}

// lockOps returns the lock routes.
func lockOps() []op {
	return []op{
		{method: "POST", path: wire.PathAcquire, id: "acquire", perm: auth.Write, tag: "locks", summary: "Take a lock, waiting in line",
			desc: "Takes the lock (or all of keys, atomically) for owner, queueing first-in first-out behind its holders for at most wait_ms " +
				"(0: up to 5 minutes, then 408 wait_timeout; the Go client re-issues). Repeating a request with the same request_id " +
				"answers the first outcome (exactly once). The answer's fence grows with every grant of the key: pass it to the resource you guard.",
			req: acq, answers: append([]answer{ok(lease, "The lease.")}, errs(400, 403, 408, 409, 410, 423, 507)...)},
		{method: "POST", path: wire.PathTry, id: "try", perm: auth.Write, tag: "locks", summary: "Take a lock if free",
			desc: "As acquire, without waiting: 423 locked (or lock_delay) when the lock is taken.",
			req:  api.AcquireRequest{Key: "jobs/nightly", Owner: "worker-1", TTLMs: 30000}, answers: append([]answer{ok(lease, "The lease.")}, errs(400, 403, 409, 410, 423, 507)...)},
		{method: "POST", path: wire.PathRelease, id: "release", perm: auth.Write, tag: "locks", summary: "Release a hold",
			desc: "Ends owner's hold. A plain release ends a reentrant hold whole; reentrant: true takes one count off. " +
				"force: true (admin) ends whoever holds the key.",
			req: api.ReleaseRequest{Key: "jobs/nightly", Owner: "worker-1"}, answers: append([]answer{ok(api.ReleaseResult{Released: true}, "What the release did.")}, errs(400, 403, 404, 409)...)},
		{method: "POST", path: wire.PathExtend, id: "extend", perm: auth.Write, tag: "locks", summary: "Renew a lease",
			req: api.ExtendRequest{Key: "jobs/nightly", Owner: "worker-1", TTLMs: 30000}, answers: append([]answer{ok(lease, "The renewed lease.")}, errs(400, 403, 404, 409)...)},
		{method: "GET", path: wire.PathLocks, id: "listLocks", perm: auth.Read, tag: "locks", summary: "List locks by prefix, a page at a time",
			desc: "A user sees only keys its patterns allow; a page may then come back short, and next still continues.",
			params: []param{pPrefix, {"after", "query", "string", "The last key of the previous page (its next)."},
				{"limit", "query", "integer", "Locks per page: default 100, at most 10000."}, pStale, pIndex, pWait},
			answers: append([]answer{{status: 200, desc: "One page; index is the last change of any key under the prefix.", body: api.ListResult{Locks: []api.LockInfo{info}, Index: 40}, header: indexHeader}}, errs(400, 503)...)},
		{method: "GET", path: wire.PathLockPrefix + "{key}", id: "inspect", perm: auth.Read, tag: "locks", summary: "Inspect one lock: holders, waiters, fence",
			desc:   "With index, a blocking query (docs/http-api.md, blocking queries): a key with nothing at it then answers 200 with state free instead of 404.",
			params: []param{pKey, pStale, pIndex, pWait}, answers: append([]answer{{status: 200, desc: "The lock.", body: info, header: indexHeader}}, errs(400, 403, 404, 503)...)},
		{method: "GET", path: wire.PathLockPrefix + "{key}" + wire.PathHistory, id: "history", perm: auth.Read, tag: "locks", summary: "A lock's recent grants",
			desc:   "Newest first, as the answering node applied them; kept in memory and bounded, so it starts empty after a restart.",
			params: []param{pKey},
			answers: append([]answer{ok(api.History{Key: "jobs/nightly", Entries: []api.HistoryEntry{{Owner: "worker-1", Mode: api.ModeExclusive, Fence: 7, GrantedMs: 1767225600000, End: api.EndHeld}}},
				"The history.")}, errs(400, 403, 404)...)},
	}
}

// sessionOps returns the session routes.
func sessionOps() []op {
	return []op{
		{method: "POST", path: wire.PathSessions, id: "openSession", perm: auth.Write, tag: "sessions", summary: "Open a session",
			desc: "Holds and leaderships taken with a session end when it does: when no keepalive arrives within its TTL, or on close.",
			req:  wire.SessionRequest{TTLMs: 10000}, answers: append([]answer{ok(api.SessionInfo{ID: "s-8d2f", TTLMs: 10000}, "The session.")}, errs(400)...)},
		{method: "PUT", path: wire.PathSessions + "/{id}/keepalive", id: "keepAlive", perm: auth.Write, tag: "sessions", summary: "Keep a session alive",
			params: []param{pSession}, answers: append([]answer{ok(api.SessionInfo{ID: "s-8d2f", TTLMs: 10000}, "The session, renewed.")}, errs(410)...)},
		{method: "POST", path: wire.PathSessions + "/{id}/keepalive", id: "keepAlivePost", perm: auth.Write, tag: "sessions", summary: "Keep a session alive (as PUT)",
			params: []param{pSession}, answers: append([]answer{ok(api.SessionInfo{ID: "s-8d2f", TTLMs: 10000}, "The session, renewed.")}, errs(410)...)},
		{method: "DELETE", path: wire.PathSessions + "/{id}", id: "closeSession", perm: auth.Write, tag: "sessions", summary: "Close a session, ending its holds",
			params: []param{pSession}, answers: append([]answer{none}, errs(410)...)},
	}
}

// electionOps returns the election routes.
func electionOps() []op {
	return []op{
		{method: "POST", path: wire.PathElections + "{name}/campaign", id: "campaign", perm: auth.Write, tag: "elections", summary: "Run for leader, waiting until elected",
			desc:   "Blocks until this campaign leads. The answer's token is the campaign's secret, needed to resign or proclaim; observers never see it.",
			params: []param{pElection}, req: wire.CampaignRequest{Value: "host-a:8080", Session: "s-8d2f"},
			answers: append([]answer{ok(leader, "This campaign leads.")}, errs(400, 403, 410)...)},
		{method: "POST", path: wire.PathElections + "{name}/resign", id: "resign", perm: auth.Write, tag: "elections", summary: "Step down",
			params: []param{pElection}, req: wire.ResignRequest{Value: "host-a:8080", Token: "c0ffee"}, answers: append([]answer{none}, errs(400, 403, 404, 409)...)},
		{method: "POST", path: wire.PathElections + "{name}/proclaim", id: "proclaim", perm: auth.Write, tag: "elections", summary: "Change the leader's value, keeping leadership and fence",
			params: []param{pElection}, req: wire.ProclaimRequest{Value: "host-a:8080", Token: "c0ffee", NewValue: "host-a:9090"},
			answers: append([]answer{ok(api.Leader{Election: "scheduler", Value: "host-a:9090", Fence: 3, Token: "c0ffee"}, "The leadership, updated.")}, errs(400, 403, 404, 409)...)},
		{method: "GET", path: wire.PathElections + "{name}/observe", id: "observe", perm: auth.Read, tag: "elections", summary: "Stream the election's leader",
			desc:   "One JSON Leader (without its token) per line, flushed on every change, first the current one; an empty value and fence 0 while nobody leads. The stream lasts until the client leaves.",
			params: []param{pElection},
			answers: append([]answer{{status: 200, desc: "A stream of leaders, one per line.", body: api.Leader{Election: "scheduler", Value: "host-a:8080", Fence: 3}, ctype: wire.ContentTypeNDJSON}},
				errs(403)...)},
	}
}

// fenceOps returns the fence registry's route.
func fenceOps() []op {
	return []op{
		{method: "POST", path: wire.PathFenceCheck, id: "fenceCheck", perm: auth.Write, tag: "locks", summary: "Check a fence token and advance it",
			desc: "ok is true when token is at least the highest token seen for resource, which then becomes token: a resource that asks before each write refuses a holder whose lease was lost.",
			req:  wire.FenceCheckRequest{Resource: "db/orders", Token: 7}, answers: append([]answer{ok(api.FenceResult{OK: true, Highest: 7}, "The check.")}, errs(400, 403)...)},
	}
}

// nodeOps returns the routes about the node itself: status, probes,
// this document, metrics.
func nodeOps() []op {
	return []op{
		{method: "GET", path: wire.PathStatus, id: "status", perm: auth.Read, tag: "cluster", summary: "This node's view of the cluster",
			answers: []answer{ok(status, "The status.")}},
		{method: "GET", path: wire.PathLivez, id: "livez", tag: "probes", public: true, summary: "Liveness: the process serves HTTP",
			answers: []answer{{status: 200, desc: "ok", ctype: "text/plain"}}},
		{method: "GET", path: wire.PathReadyz, id: "readyz", tag: "probes", public: true, summary: "Readiness: this node can serve requests now",
			answers: []answer{{status: 200, desc: "ok", ctype: "text/plain"}, {status: 503, desc: "not ready: and the reason", ctype: "text/plain"}}},
		{method: "GET", path: wire.PathOpenAPI, id: "openapi", tag: "meta", public: true, summary: "This document",
			answers: []answer{{status: 200, desc: "The OpenAPI 3.1 document.", ctype: jsonType}}},
		{method: "GET", path: wire.PathMetrics, id: "metrics", perm: auth.Read, tag: "meta", summary: "Prometheus metrics",
			desc:    "Served when the node runs with metrics (locknode serve does); needs the read category.",
			answers: []answer{{status: 200, desc: "Prometheus text format.", ctype: "text/plain"}}},
	}
}

// adminOps returns the cluster administration routes.
func adminOps() []op {
	return []op{
		{method: "POST", path: wire.PathMembers, id: "addMember", perm: auth.Admin, tag: "cluster", summary: "Add a voter (admin)",
			desc: "Served on cluster nodes. Without force the leader first checks that address answers the peer handshake.",
			req:  wire.MemberRequest{ID: "n3", Address: "10.0.0.3:7701"}, answers: append([]answer{none}, errs(400, 403, 409, 503)...)},
		{method: "DELETE", path: wire.PathMembers + "/{id}", id: "removeMember", perm: auth.Admin, tag: "cluster", summary: "Remove a member (admin)",
			params: []param{pMember}, answers: append([]answer{none}, errs(403, 404, 503)...)},
		{method: "POST", path: wire.PathTransferLeader, id: "transferLeader", perm: auth.Admin, tag: "cluster", summary: "Move leadership to a voter, or to raft's pick (admin)",
			desc: "Served by the leader; a follower answers 503 naming the leader's HTTP address. Answers once the new leader is known.",
			req:  api.TransferRequest{ID: "n2"}, answers: append([]answer{ok(api.TransferResult{Previous: "n1", Leader: "n2"}, "The previous and the new leader.")}, errs(400, 403, 404, 409, 503)...)},
		{method: "POST", path: wire.PathClusterUpgrade, id: "upgrade", perm: auth.Admin, tag: "cluster", summary: "Activate the newest cluster version every member runs (admin)",
			desc:    "See docs/UPGRADING.md. A member that does not answer makes it fail with 409 and change nothing.",
			answers: append([]answer{ok(api.UpgradeResult{Before: 1, ClusterVersion: 1, Members: map[string]string{"n1": "1..1"}}, "What was activated.")}, errs(403, 409)...)},
		{method: "GET", path: wire.PathSnapshot, id: "snapshot", perm: auth.Admin, tag: "cluster", summary: "Stream a consistent snapshot (admin)",
			desc: "The backup locknode snapshot save writes. A stream cut before its end is not whole. After the last byte the node sends the HTTP trailer " + wire.TrailerSnapshotSHA256 + ": the SHA-256 (hex) of the stream's bytes, computed as it sent them.",
			answers: append([]answer{{status: 200, desc: "The snapshot.", ctype: "application/octet-stream",
				header: map[string]string{wire.HeaderSnapshotIndex: "The applied index the snapshot was taken at.",
					wire.HeaderSnapshotTerm: "The raft term of the entry at that index (absent when the node does not know it).",
					"Trailer":               "Names the trailer " + wire.TrailerSnapshotSHA256 + "."}}}, errs(403)...)},
	}
}

// dashboardOps returns the dashboard and the data it polls.
func dashboardOps() []op {
	return []op{
		{method: "GET", path: "/", id: "root", tag: "dashboard", public: true, summary: "Redirects to the dashboard",
			answers: []answer{{status: 302, desc: "To /ui/."}}},
		{method: "GET", path: "/ui", id: "uiRedirect", tag: "dashboard", public: true, summary: "Redirects to the dashboard",
			answers: []answer{{status: 302, desc: "To /ui/."}}},
		{method: "GET", path: wire.PathUI, id: "ui", tag: "dashboard", public: true, summary: "The dashboard's page (its assets are served below /ui/)",
			answers: []answer{{status: 200, desc: "The page.", ctype: "text/html"}}},
		{method: "GET", path: wire.PathActivity, id: "activity", perm: auth.Read, tag: "dashboard", summary: "This node's recent per-second activity",
			answers: append([]answer{ok(api.Activity{Node: "n1", Samples: []api.ActivitySample{{UnixSec: 1767225600, Grants: 3, Releases: 2}}, WaitBuckets: api.WaitBucketLabels()}, "The samples.")}, errs(404)...)},
		{method: "GET", path: wire.PathClusterView, id: "clusterView", perm: auth.Read, tag: "dashboard", summary: "Every member's status, as this node gathered it",
			answers: []answer{ok(api.ClusterView{Node: "n1", Nodes: []api.NodeView{{ID: "n1", HTTPAddr: "10.0.0.1:7700", Self: true, Status: &status}, {ID: "n2", HTTPAddr: "10.0.0.2:7700", Error: "status 503: no leader"}}}, "The view.")}},
		{method: "GET", path: wire.PathUILocks, id: "uiLocks", perm: auth.Read, tag: "dashboard", summary: "One page of the locks that match the filters, with totals of all of them",
			params: []param{pPrefix, {"owner", "query", "string", "Only locks one of whose holders has this owner."},
				{"state", "query", "string", "all (default), held, free, waiters (a queue, or a free lock in lock-delay) or contended (held with waiters)."},
				{"meta", "query", "string", "Repeatable: name=value or name, all matched on one holder's metadata."},
				{"order", "query", "string", "key (default), oldest or newest."},
				{"offset", "query", "integer", "Skip this many, 0 to 10000."}, {"limit", "query", "integer", "At most this many, 0 to 1000 (0: the totals only)."}, pStale},
			answers: append([]answer{ok(api.LockPage{Locks: []api.LockInfo{info}, Total: 1, Totals: api.LockTotals{Locks: 1, Held: 1, Holders: 1}}, "One page and the totals.")}, errs(400)...)},
		{method: "GET", path: wire.PathLocksByAge, id: "locksByAge", perm: auth.Read, tag: "dashboard", summary: "Held locks ordered by the age of their oldest hold",
			params: []param{pPrefix, {"order", "query", "string", "oldest (default) or newest."},
				{"offset", "query", "integer", "Skip this many, 0 to 10000."}, {"limit", "query", "integer", "At most this many, 0 to 1000; default 100."}, pStale},
			answers: append([]answer{ok(api.AgeList{Locks: []api.LockInfo{info}, Total: 1}, "One page.")}, errs(400)...)},
		{method: "POST", path: wire.PathForceRelease, id: "forceRelease", perm: auth.Admin, tag: "dashboard", summary: "End whoever holds a key, with a reason for the audit log (admin)",
			req: api.ForceReleaseRequest{Key: "jobs/nightly", Reason: "worker-1 is gone"}, answers: append([]answer{ok(api.ReleaseResult{Released: true}, "What the release did.")}, errs(400, 403)...)},
	}
}

// requestRequired lists the fields the server refuses a request body
// without (the Validate methods of the api types).
var requestRequired = map[reflect.Type][]string{
	reflect.TypeFor[api.AcquireRequest]():      {"owner"},
	reflect.TypeFor[api.ReleaseRequest]():      {},
	reflect.TypeFor[api.ExtendRequest]():       {"owner", "ttl_ms"},
	reflect.TypeFor[wire.SessionRequest]():     {"ttl_ms"},
	reflect.TypeFor[wire.CampaignRequest]():    {"value", "session"},
	reflect.TypeFor[wire.ResignRequest]():      {"value", "token"},
	reflect.TypeFor[wire.ProclaimRequest]():    {"value", "token", "new_value"},
	reflect.TypeFor[wire.FenceCheckRequest]():  {"resource", "token"},
	reflect.TypeFor[wire.MemberRequest]():      {"id", "address"},
	reflect.TypeFor[api.ForceReleaseRequest](): {"key", "reason"},
}

// errorStatus describes the error answers by status: which codes each
// carries (httpapi's error table).
var errorStatus = map[int]string{
	401: "unauthorized: no or wrong HTTP Basic credentials (the node has users).",
	403: "forbidden: the user lacks the route's category, or a key is outside its key patterns.",
	400: "bad_request: a malformed request or an invalid value; limit: a value over a limit (the message names the limit and its value).",
	404: "not_held: the owner holds no such lock (or the leadership ended); not_found: no such lock, member, or history on this node.",
	408: "wait_timeout: the wait ran out before the grant; cancelled: the client went away; bad_request: the request body did not arrive in time.",
	409: "not_owner: another owner (or token) holds it; stale_fence; conflict: parameters that differ from the lock's (mode, permits); max_hold: the hold reached its max hold.",
	410: "session_expired: the session is unknown or expired.",
	423: "locked: another owner holds it; lock_delay: the key is in lock-delay.",
	503: "no_leader: no leader reachable now; too_many_connections: the node is at its connection limit; too_many_watchers: the node has --max-watchers blocking queries waiting. Retry on another node with the same request_id.",
	507: "out_of_memory: the key space is over its memory limit; releases still work.",
}

// requestOneOf lists, for request types, field sets of which a body
// must have exactly one.
var requestOneOf = map[reflect.Type][]string{
	reflect.TypeFor[api.AcquireRequest](): {"key", "keys"},
	reflect.TypeFor[api.ReleaseRequest](): {"key", "keys"},
	reflect.TypeFor[api.ExtendRequest]():  {"key", "keys"},
}

// errorCodes is every code an error body carries.
var errorCodes = []string{
	api.CodeLocked, api.CodeNotOwner, api.CodeNotHeld, api.CodeNotFound, api.CodeWaitTimeout, api.CodeNoLeader,
	api.CodeBadRequest, api.CodeSessionExpired, api.CodeStaleFence, api.CodeConflict, api.CodeLimit, api.CodeCancelled,
	api.CodeLockDelay, api.CodeMaxHold, api.CodeOutOfMemory, api.CodeInternal, api.CodeUnauthorized, api.CodeForbidden,
	wire.CodeTooManyConns, wire.CodeUnsupportedMediaType, wire.CodeTooManyWatchers,
}

// Generate returns the document, indented, with a final newline.
func Generate() ([]byte, error) {
	s := &schemas{defs: map[string]any{}, required: requestRequired, docs: docs, used: map[string]bool{}}
	paths := map[string]map[string]any{}
	seen := map[string]bool{}
	for _, o := range ops() {
		if seen[o.id] {
			return nil, fmt.Errorf("operation id %q twice", o.id)
		}
		seen[o.id] = true
		if o.public == (o.perm != 0) {
			return nil, fmt.Errorf("operation %q: give it a perm or make it public", o.id)
		}
		item := paths[o.path]
		if item == nil {
			item = map[string]any{}
			paths[o.path] = item
		}
		m := strings.ToLower(o.method)
		if item[m] != nil {
			return nil, fmt.Errorf("%s %s twice", o.method, o.path)
		}
		item[m] = s.operation(o)
	}
	errBody := s.ref(reflect.TypeFor[api.ErrorBody]())
	eb := s.defs["ErrorBody"].(map[string]any)
	eb["properties"].(map[string]any)["code"].(map[string]any)["enum"] = errorCodes
	for k := range docs {
		if !s.used[k] {
			return nil, fmt.Errorf("description %q names no type or field", k)
		}
	}
	doc := map[string]any{
		"openapi": "3.1.0",
		"info": map[string]any{
			"title":       "locknode HTTP API",
			"version":     "v1",
			"description": infoDesc,
		},
		"jsonSchemaDialect": "https://json-schema.org/draft/2020-12/schema",
		"tags": []any{
			map[string]any{"name": "locks", "description": "Leases with fence tokens: exclusive, shared and semaphore holds, reentrancy, waiting in line."},
			map[string]any{"name": "sessions", "description": "Lifetimes that holds and leaderships share."},
			map[string]any{"name": "elections", "description": "Leader election over a lock (the key election/{name})."},
			map[string]any{"name": "cluster", "description": "Status, membership, upgrades, backups."},
			map[string]any{"name": "probes", "description": "For load balancers and orchestrators; public."},
			map[string]any{"name": "meta", "description": "This document and the metrics."},
			map[string]any{"name": "dashboard", "description": "The web dashboard and the data it polls."},
		},
		"servers": []any{map[string]any{"url": "{scheme}://{address}", "description": "Any member of the cluster: followers pass writes to the leader.",
			"variables": map[string]any{
				"scheme":  map[string]any{"default": "http", "enum": []any{"http", "https"}, "description": "https when the node serves TLS (--tls-cert)."},
				"address": map[string]any{"default": "127.0.0.1:8080", "description": "The node's --http-addr."},
			}}},
		"security": []any{map[string]any{"basic": []any{}}},
		"paths":    paths,
		"components": map[string]any{
			"schemas": s.defs,
			"securitySchemes": map[string]any{"basic": map[string]any{"type": "http", "scheme": "basic",
				"description": "Needed when the node runs with a users file; each route needs the read, write or admin category, and key patterns limit the keys a user names."}},
			"responses": map[string]any{"Error": map[string]any{"description": "An error: code is stable, message is for people.",
				"content": map[string]any{jsonType: map[string]any{"schema": errBody}}}},
		},
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func (s *schemas) operation(o op) map[string]any {
	out := map[string]any{"operationId": o.id, "tags": []any{o.tag}, "summary": o.summary}
	if o.desc != "" {
		out["description"] = o.desc
	}
	if o.public {
		out["security"] = []any{}
	} else {
		// An extension tools ignore and the tests compare with the
		// server's own route table.
		out["x-permission"] = o.perm.String()
		d := "Needs the " + o.perm.String() + " category when the node has users."
		if o.desc != "" {
			d = o.desc + " " + d
		}
		out["description"] = d
	}
	var params []any
	for _, p := range o.params {
		params = append(params, map[string]any{"name": p.name, "in": p.in, "required": p.in == "path",
			"description": p.desc, "schema": map[string]any{"type": p.typ}})
	}
	if params != nil {
		out["parameters"] = params
	}
	if o.req != nil {
		out["requestBody"] = map[string]any{"required": true, "content": map[string]any{
			jsonType: map[string]any{"schema": s.ref(reflect.TypeOf(o.req)), "example": o.req}}}
	}
	resps := map[string]any{}
	if !o.public {
		// With users on, any such route may answer these.
		o.answers = append(o.answers, answer{status: 401}, answer{status: 403})
	}
	jsonOp := false
	for _, a := range o.answers {
		code := strconv.Itoa(a.status)
		if a.status >= 400 && a.body == nil && a.ctype == "" {
			d, ok := errorStatus[a.status]
			if !ok {
				panic(fmt.Sprintf("openapigen: no description of error status %d", a.status))
			}
			resps[code] = map[string]any{"description": d, "content": map[string]any{
				jsonType: map[string]any{"schema": s.ref(reflect.TypeFor[api.ErrorBody]())}}}
			continue
		}
		r := map[string]any{"description": a.desc}
		if r["description"] == "" {
			r["description"] = http.StatusText(a.status)
		}
		switch {
		case a.body != nil:
			ct := a.ctype
			if ct == "" {
				ct = jsonType
				jsonOp = true
			}
			r["content"] = map[string]any{ct: map[string]any{"schema": s.ref(reflect.TypeOf(a.body)), "example": a.body}}
		case a.ctype != "":
			r["content"] = map[string]any{a.ctype: map[string]any{}}
		}
		if a.header != nil {
			h := map[string]any{}
			for k, d := range a.header {
				h[k] = map[string]any{"description": d, "schema": map[string]any{"type": "string"}}
			}
			r["headers"] = h
		}
		resps[code] = r
	}
	if jsonOp || o.req != nil || strings.HasPrefix(o.path, "/v1/") && o.id != "openapi" {
		resps["default"] = map[string]any{"$ref": "#/components/responses/Error"}
	}
	out["responses"] = resps
	return out
}
