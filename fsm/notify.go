package fsm

// Keyspace notifications: the events Redis 7 publishes on
// __keyspace@0__:<key> and __keyevent@0__:<event> (notify.c), emitted as
// EvKeyspace in the order the entry causes them, while SetKeyspaceEvents
// is on. They are output of the entry, never state: a replica that emits
// them emits the same ones for the same entry, and the RESP bridge of
// each node filters them by its own notify-keyspace-events. Which
// commands emit which names follows Redis' table (docs/redis.md
// "Keyspace notifications"); the lock side is:
//
//   - a hold begins (native acquire, a waiter granted, SET NX): "set",
//     then "expire" when the hold has a deadline; a key created for it
//     emits "new" first;
//   - a hold's lease is extended or re-set: "expire";
//   - a hold ends by its owner's release, a forced release or its
//     session's close: "del";
//   - a hold ends because its lease (or max hold, or its session) ran
//     out: "expired".
//
// Key-level changes of Redis values are emitted by the commands, since
// the name depends on the command (INCR's "incrby", HDEL's "hdel" then
// "del" when the hash is left empty ...), never by the del/put
// primitives.

// Event names (Redis spells them so; the bridge maps each to its class).
const (
	NotifyNew         = "new"
	NotifySet         = "set"
	NotifyDel         = "del"
	NotifyExpire      = "expire"
	NotifyExpired     = "expired"
	NotifyPersist     = "persist"
	NotifyIncrby      = "incrby"
	NotifyIncrbyFloat = "incrbyfloat"
	NotifyAppend      = "append"
	NotifyHset        = "hset"
	NotifyHdel        = "hdel"
	NotifyHincrby     = "hincrby"
	NotifySadd        = "sadd"
	NotifySrem        = "srem"
	NotifyZadd        = "zadd"
	NotifyZincr       = "zincr"
	NotifyZrem        = "zrem"
	NotifyZremByScore = "zremrangebyscore" // Redis 7 spells it so, not as its docs do
	NotifyLpush       = "lpush"
	NotifyRpush       = "rpush"
	NotifyLpop        = "lpop"
	NotifyRpop        = "rpop"
	NotifyLrem        = "lrem"
)

// SetKeyspaceEvents turns the EvKeyspace events of the entries applied
// from now on on or off (default off). They are output, never state: the
// table changes alike either way, so replicas may differ in this setting
// (a node turns it on while its RESP bridge's notify-keyspace-events
// selects any). Off, an entry allocates nothing for them.
func (t *keySpace) SetKeyspaceEvents(on bool) { t.keyspaceEvents = on }

// notify emits the keyspace event name for key.
func (c *applyCtx) notify(name, key string) {
	if c.keyspace {
		c.emit(Event{Kind: EvKeyspace, Key: key, Message: name})
	}
}

// holdEndEvent is the keyspace event of a hold that ended with reason.
func holdEndEvent(reason Reason) string {
	if reason == ReasonExpired || reason == ReasonSession {
		return NotifyExpired
	}
	return NotifyDel
}
