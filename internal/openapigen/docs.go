package main

const infoDesc = "The lock service's HTTP API. Bodies are JSON (write requests must say Content-Type: application/json; " +
	"unknown fields are refused); durations are integer milliseconds (_ms); times are cluster time in unix " +
	"milliseconds. Every error answer has the body {\"code\", \"message\"}: branch on code, show message. A 503 " +
	"(no_leader) may be retried on another node with the same request_id. Keys in paths: see the key parameter of " +
	"GET /v1/locks/{key}. Any path not listed here answers 404 not_found."

// docs describes types ("Type") and fields ("Type.json_name"); Generate
// fails on an entry that names no type or field.
var docs = map[string]string{
	"ErrorBody":         "The body of every error answer.",
	"ErrorBody.code":    "Stable; clients branch on it.",
	"ErrorBody.message": "For people: the cause first, then what to do.",

	"AcquireRequest":               "Give key or keys (all or nothing).",
	"AcquireRequest.key":           "The lock's key.",
	"AcquireRequest.keys":          "Several keys, taken atomically (all or nothing).",
	"AcquireRequest.owner":         "The owner token the client chose; release and extend name it.",
	"AcquireRequest.ttl_ms":        "Lease length. May be 0 only with a session: the hold then lasts as long as the session.",
	"AcquireRequest.wait_ms":       "acquire: how long to wait in line (0: up to 5 minutes). try ignores it.",
	"AcquireRequest.mode":          "exclusive (default), shared, or semaphore (with permits).",
	"AcquireRequest.permits":       "A semaphore's size: up to this many holders at once.",
	"AcquireRequest.reentrant":     "The same owner may take the lock again; each take counts.",
	"AcquireRequest.session":       "The hold ends with this session.",
	"AcquireRequest.request_id":    "Makes retries exactly once: a request repeated with the same id answers the first outcome.",
	"AcquireRequest.lock_delay_ms": "After the hold ends by expiry or its session, nobody may take the key for this long.",
	"AcquireRequest.max_hold_ms":   "The hold ends after this long however often it is extended.",
	"AcquireRequest.meta":          "Free metadata kept with the hold and shown by inspect and list (who took it: host, pid, command).",

	"Lease":             "A granted hold.",
	"Lease.fence":       "The fence token: grows with every grant of the key. Pass it to the resource the lock guards.",
	"Lease.ttl_ms":      "The lease as granted: less than asked when a max hold caps it.",
	"Lease.count":       "A reentrant hold's count.",
	"Lease.deadline_ms": "When the lease ends, in cluster time.",
	"Lease.waited_ms":   "How long the acquire waited in line: count a safe deadline from the send time plus this.",

	"ReleaseRequest":           "Give key or keys. owner is required unless force.",
	"ReleaseRequest.owner":     "The owner token the hold was taken with.",
	"ReleaseRequest.keys":      "The keys of a multi-lock, released together.",
	"ExtendRequest.ttl_ms":     "The new lease length, from now.",
	"ExtendRequest.keys":       "The keys of a multi-lock, extended together.",
	"ReleaseRequest.reentrant": "Take one count off a reentrant hold instead of ending it.",
	"ReleaseRequest.force":     "Admin: end whoever holds the key (owner may then be empty).",
	"ReleaseResult.released":   "The hold is gone.",
	"ReleaseResult.count":      "The reentrant count left.",

	"LockInfo.kind":                    "lock, or the Redis type of a key set over RESP (string, hash, ...).",
	"LockInfo.ttl_ms":                  "Time left on the key; -1: none.",
	"LockInfo.lock_delay_remaining_ms": "Time left in lock-delay.",
	"LockInfo.applied_index":           "The raft index the answer reflects.",
	"LockInfo.state":                   "held (one or more holds), free (none), or value (the key holds a Redis value).",
	"LockInfo.index":                   "The index of the key's last change as this node knows it (as the X-Locknode-Index header): send it as index to wait for the next.",
	"ListResult.index":                 "The index of the last change of any key under the prefix as this node knows it (as the X-Locknode-Index header).",
	"Holder.ttl_ms":                    "Time left.",
	"Holder.granted_ms":                "When it was granted (0 for a hold restored from an older snapshot).",
	"Holder.extended_ms":               "When its lease was last renewed; absent if never.",
	"Waiter.wait_ms":                   "Time left to wait.",
	"Waiter.queued_ms":                 "When it queued.",
	"ListResult.next":                  "Pass as after for the next page; absent at the end.",

	"SessionRequest.ttl_ms":      "How long the session lives without a keepalive.",
	"CampaignRequest.value":      "What the leader publishes (an address, say).",
	"CampaignRequest.session":    "The leadership ends with this session.",
	"CampaignRequest.token":      "The campaign's secret; empty lets the server choose. Repeating a campaign with the same token answers the same leadership.",
	"ProclaimRequest.new_value":  "The value to publish.",
	"Leader.value":               "The leader's value; empty while nobody leads.",
	"Leader.token":               "The campaign's secret: only its campaigner gets it; resign and proclaim need it.",
	"FenceCheckRequest.resource": "The guarded resource's name.",
	"FenceCheckRequest.token":    "The fence token of the writer's lease.",
	"FenceResult.highest":        "The highest token seen for the resource after the check.",

	"MemberRequest.address":      "The new member's raft (peer) address.",
	"MemberRequest.force":        "Skip the check that the address answers (a member not up yet); only the leader takes it.",
	"Member.last_contact_ms":     "In the leader's status: how long ago the member last answered it.",
	"Member.unreachable":         "In the leader's status: the member has not answered for three heartbeat timeouts.",
	"Status.leader":              "The leader's id; empty when none is known.",
	"Status.leader_addr":         "The leader's raft address.",
	"Status.fsm_time_ms":         "The cluster clock.",
	"Status.mirror":              "The Redis mirror's state, when one runs.",
	"Status.keyspace_max_bytes":  "The key space's memory limit; 0: none.",
	"Status.cluster_version":     "The active cluster version (docs/UPGRADING.md).",
	"Status.cluster_versions":    "The cluster versions this node's binary runs.",
	"Status.apply_halted":        "Why this node stopped applying the log, when it did.",
	"UpgradeResult.members":      "Each member's runnable cluster versions, as it answered.",
	"HistoryEntry.end":           "How the hold ended: held (not yet), release, expiry, forced, session.",
	"HistoryEntry.ended_ms":      "When it ended; 0 while held.",
	"ActivitySample.t":           "The second (unix).",
	"ActivitySample.contended":   "Acquires that found the lock taken and queued.",
	"ActivitySample.wait_p99_ms": "99th percentile of the queue waits that ended in a grant (an upper bound).",
	"NodeView.error":             "Why the member's status is missing.",
	"AgeList.total":              "Held locks that match, in all pages.",
	"ForceReleaseRequest.reason": "Written to the audit log.",
}
