package api

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// Limits bound what one request may ask for. They are the one definition
// of the request limits every front end checks before it proposes
// anything: the embedded node, the HTTP server, the RESP bridge's LOCK.*
// commands and the Go client all call the request types' Validate with
// them. The state machine (fsm.Config) enforces the same values again as
// the last line; cluster.Node.Limits derives a node's Limits from its
// fsm.Config, and a test in cluster pins DefaultLimits to
// fsm.DefaultConfig, so the numbers below are the documented defaults of
// both.
//
// A value past a limit is refused (ErrLimit; a malformed one ErrBadRequest)
// with a message naming the field, the value and the limit; nothing is
// clamped.
type Limits struct {
	// MaxKeyBytes bounds a lock key, fence resource or election name.
	MaxKeyBytes int
	// MaxOwnerBytes bounds an owner token, session id, request id or
	// election value.
	MaxOwnerBytes int
	// MaxKeys bounds the keys of one multi-key request.
	MaxKeys int
	// MinTTLMs and MaxTTLMs bound a lease (ttl_ms of acquire, extend and
	// sessions). MaxTTLMs also bounds wait_ms, lock_delay_ms and
	// max_hold_ms: nothing a request starts outlives the longest lease.
	MinTTLMs, MaxTTLMs int64
	// MaxPermits bounds a semaphore's size: its holders live in one lock
	// value, so the size bounds that value's memory and the cost of
	// the operations on it.
	MaxPermits int
	// MaxMetaEntries, MaxMetaKeyBytes, MaxMetaValueBytes and MaxMetaBytes
	// bound an acquire's metadata (AcquireRequest.Meta): the number of
	// entries, the length of a name and of a value, and the names and
	// values together. Metadata lives with the hold in every node's
	// memory and in every snapshot, so it is kept small: who, where,
	// what for.
	MaxMetaEntries, MaxMetaKeyBytes, MaxMetaValueBytes, MaxMetaBytes int
}

// Default limits (DefaultLimits).
const (
	DefaultMaxKeyBytes   = 512
	DefaultMaxOwnerBytes = 256
	DefaultMaxKeys       = 1024
	DefaultMinTTLMs      = 1
	DefaultMaxTTLMs      = 24 * 60 * 60 * 1000
	DefaultMaxPermits    = 10000

	DefaultMaxMetaEntries    = 16
	DefaultMaxMetaKeyBytes   = 64
	DefaultMaxMetaValueBytes = 256
	DefaultMaxMetaBytes      = 1024
)

// DefaultLimits returns the documented defaults.
func DefaultLimits() Limits {
	return Limits{
		MaxKeyBytes: DefaultMaxKeyBytes, MaxOwnerBytes: DefaultMaxOwnerBytes, MaxKeys: DefaultMaxKeys,
		MinTTLMs: DefaultMinTTLMs, MaxTTLMs: DefaultMaxTTLMs, MaxPermits: DefaultMaxPermits,
		MaxMetaEntries: DefaultMaxMetaEntries, MaxMetaKeyBytes: DefaultMaxMetaKeyBytes,
		MaxMetaValueBytes: DefaultMaxMetaValueBytes, MaxMetaBytes: DefaultMaxMetaBytes,
	}
}

// WithDefaults returns l with its zero fields set to DefaultLimits'.
func (l Limits) WithDefaults() Limits {
	d := DefaultLimits()
	fill := func(v *int, def int) {
		if *v == 0 {
			*v = def
		}
	}
	fill64 := func(v *int64, def int64) {
		if *v == 0 {
			*v = def
		}
	}
	fill(&l.MaxKeyBytes, d.MaxKeyBytes)
	fill(&l.MaxOwnerBytes, d.MaxOwnerBytes)
	fill(&l.MaxKeys, d.MaxKeys)
	fill64(&l.MinTTLMs, d.MinTTLMs)
	fill64(&l.MaxTTLMs, d.MaxTTLMs)
	fill(&l.MaxPermits, d.MaxPermits)
	fill(&l.MaxMetaEntries, d.MaxMetaEntries)
	fill(&l.MaxMetaKeyBytes, d.MaxMetaKeyBytes)
	fill(&l.MaxMetaValueBytes, d.MaxMetaValueBytes)
	fill(&l.MaxMetaBytes, d.MaxMetaBytes)
	return l
}

// Validate reports limits that cannot work.
func (l Limits) Validate() error {
	switch {
	case l.MaxKeyBytes <= 0, l.MaxOwnerBytes <= 0, l.MaxKeys <= 0, l.MaxPermits <= 0,
		l.MaxMetaEntries <= 0, l.MaxMetaKeyBytes <= 0, l.MaxMetaValueBytes <= 0, l.MaxMetaBytes <= 0:
		return fmt.Errorf("api: limits must be positive: %+v", l)
	case l.MinTTLMs <= 0 || l.MaxTTLMs < l.MinTTLMs:
		return fmt.Errorf("api: limits: need 0 < MinTTLMs <= MaxTTLMs, got %d, %d", l.MinTTLMs, l.MaxTTLMs)
	}
	return nil
}

// LimitsOf returns the limits a Locker enforces: its Limits method's, if
// it has one (cluster.Node and client.Client do), else DefaultLimits.
func LimitsOf(l any) Limits {
	if x, ok := l.(interface{ Limits() Limits }); ok {
		return x.Limits().WithDefaults()
	}
	return DefaultLimits()
}

func badRequest(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrBadRequest}, args...)...)
}

// overLimit refuses field's value v over limit; flag, if not empty, is
// the server flag that sets the limit.
func overLimit(field string, v, limit int64, unit, flag string) error {
	if flag != "" {
		return fmt.Errorf("%w: %s %d%s is over the limit of %d%s (%s)", ErrLimit, field, v, unit, limit, unit, flag)
	}
	return fmt.Errorf("%w: %s %d%s is over the limit of %d%s", ErrLimit, field, v, unit, limit, unit)
}

// CheckKey checks the key of a read (Inspect).
func (l Limits) CheckKey(key string) error {
	return l.checkName("key", key)
}

// checkName refuses an empty or too long name (key, resource, election).
func (l Limits) checkName(field, v string) error {
	if v == "" {
		return badRequest("%s is required", field)
	}
	if len(v) > l.MaxKeyBytes {
		return fmt.Errorf("%w: %s of %d bytes is over the limit of %d bytes", ErrLimit, field, len(v), l.MaxKeyBytes)
	}
	return nil
}

// checkToken refuses a too long token (owner, session, request id,
// value); required refuses an empty one too.
func (l Limits) checkToken(field, v string, required bool) error {
	if v == "" && required {
		return badRequest("%s is required", field)
	}
	if len(v) > l.MaxOwnerBytes {
		return fmt.Errorf("%w: %s of %d bytes is over the limit of %d bytes", ErrLimit, field, len(v), l.MaxOwnerBytes)
	}
	return nil
}

// checkKeys: exactly one of key and keys, none empty, none twice.
func (l Limits) checkKeys(key string, keys []string) error {
	switch {
	case key == "" && len(keys) == 0:
		return badRequest("key or keys is required")
	case key != "" && len(keys) > 0:
		return badRequest("give key or keys, not both")
	case key != "":
		return l.checkName("key", key)
	case len(keys) > l.MaxKeys:
		return overLimit("keys", int64(len(keys)), int64(l.MaxKeys), "", "")
	}
	for i, k := range keys {
		if k == "" {
			return badRequest("empty key in keys")
		}
		if err := l.checkName("key", k); err != nil {
			return err
		}
		// Quadratic but bounded by MaxKeys; a map would allocate on the
		// common one- or two-key path.
		for _, k2 := range keys[:i] {
			if k2 == k {
				return badRequest("key %q twice in keys", k)
			}
		}
	}
	return nil
}

// checkTTL checks a lease length in ms.
func (l Limits) checkTTL(field string, v int64) error {
	switch {
	case v < l.MinTTLMs:
		return badRequest("%s %d ms is under the minimum of %d ms", field, v, l.MinTTLMs)
	case v > l.MaxTTLMs:
		return overLimit(field, v, l.MaxTTLMs, " ms", "--max-ttl")
	}
	return nil
}

// checkSpan checks an optional duration in ms (0 = none): wait, lock-delay,
// max hold.
func (l Limits) checkSpan(field string, v int64) error {
	switch {
	case v < 0:
		return badRequest("%s %d ms is negative", field, v)
	case v > l.MaxTTLMs:
		return overLimit(field, v, l.MaxTTLMs, " ms", "--max-ttl")
	}
	return nil
}

// Validate checks an acquire (and a try) against l. ttl_ms may be 0 only
// with a session: the hold then lives as long as the session.
func (r *AcquireRequest) Validate(l Limits) error {
	if err := l.checkKeys(r.Key, r.Keys); err != nil {
		return err
	}
	if err := l.checkToken("owner", r.Owner, true); err != nil {
		return err
	}
	if err := l.checkToken("session", r.Session, false); err != nil {
		return err
	}
	if err := l.checkToken("request_id", r.RequestID, false); err != nil {
		return err
	}
	if r.TTLMs != 0 || r.Session == "" {
		if err := l.checkTTL("ttl_ms", r.TTLMs); err != nil {
			return err
		}
	}
	if err := l.checkSpan("wait_ms", r.WaitMs); err != nil {
		return err
	}
	if err := l.checkSpan("lock_delay_ms", r.LockDelay); err != nil {
		return err
	}
	if err := l.checkSpan("max_hold_ms", r.MaxHoldMs); err != nil {
		return err
	}
	if err := l.CheckMeta(r.Meta); err != nil {
		return err
	}
	switch {
	case r.Permits < 0:
		return badRequest("permits %d is negative", r.Permits)
	case r.Permits > l.MaxPermits:
		return overLimit("permits", int64(r.Permits), int64(l.MaxPermits), "", "--max-permits")
	}
	switch r.Mode {
	case "", ModeExclusive, ModeShared:
	case ModeSemaphore:
		if r.Permits == 0 {
			return badRequest("a semaphore needs permits > 0")
		}
	default:
		return badRequest("unknown mode %q: want %s", r.Mode, ModeList)
	}
	return nil
}

// CheckMeta checks an acquire's metadata: at most MaxMetaEntries
// entries, names not empty and at most MaxMetaKeyBytes, values at most
// MaxMetaValueBytes, all of it at most MaxMetaBytes, and valid UTF-8
// (JSON could not carry anything else unchanged). The error names the
// offending entry; nothing is truncated.
func (l Limits) CheckMeta(meta map[string]string) error {
	if len(meta) == 0 {
		return nil
	}
	if len(meta) > l.MaxMetaEntries {
		return overLimit("meta entries", int64(len(meta)), int64(l.MaxMetaEntries), "", "")
	}
	total := 0
	for k, v := range meta {
		switch {
		case k == "":
			return badRequest("meta: empty name")
		case len(k) > l.MaxMetaKeyBytes:
			return fmt.Errorf("%w: meta name of %d bytes is over the limit of %d bytes", ErrLimit, len(k), l.MaxMetaKeyBytes)
		case len(v) > l.MaxMetaValueBytes:
			return fmt.Errorf("%w: meta %q value of %d bytes is over the limit of %d bytes", ErrLimit, k, len(v), l.MaxMetaValueBytes)
		case !utf8.ValidString(k) || !utf8.ValidString(v):
			return badRequest("meta %q: not valid UTF-8", k)
		}
		total += len(k) + len(v)
	}
	if total > l.MaxMetaBytes {
		return fmt.Errorf("%w: meta of %d bytes is over the limit of %d bytes", ErrLimit, total, l.MaxMetaBytes)
	}
	return nil
}

// Validate checks a release against l: the owner may be empty only with
// Force.
func (r *ReleaseRequest) Validate(l Limits) error {
	if err := l.checkKeys(r.Key, r.Keys); err != nil {
		return err
	}
	if err := l.checkToken("owner", r.Owner, !r.Force); err != nil {
		return err
	}
	return l.checkToken("request_id", r.RequestID, false)
}

// Validate checks an extend against l.
func (r *ExtendRequest) Validate(l Limits) error {
	if err := l.checkKeys(r.Key, r.Keys); err != nil {
		return err
	}
	if err := l.checkToken("owner", r.Owner, true); err != nil {
		return err
	}
	if err := l.checkToken("request_id", r.RequestID, false); err != nil {
		return err
	}
	return l.checkTTL("ttl_ms", r.TTLMs)
}

// MaxListLimit is the largest page ListRequest.Limit asks for.
const MaxListLimit = 10000

// Validate checks a list request.
func (r *ListRequest) Validate(l Limits) error {
	switch {
	case r.Limit < 0:
		return badRequest("limit %d is negative", r.Limit)
	case r.Limit > MaxListLimit:
		return overLimit("limit", int64(r.Limit), MaxListLimit, "", "")
	}
	return nil
}

// SessionRequest opens a session (POST /v1/sessions; Locker.OpenSession
// takes its TTL).
type SessionRequest struct {
	TTLMs int64 `json:"ttl_ms"`
}

// Validate checks a session's TTL against the lease limits.
func (r *SessionRequest) Validate(l Limits) error {
	return l.checkTTL("ttl_ms", r.TTLMs)
}

// SessionTTL is OpenSession's ttl as a SessionRequest.
func SessionTTL(ttl time.Duration) SessionRequest {
	return SessionRequest{TTLMs: ttl.Milliseconds()}
}

// SessionIDRequest names a session (keep-alive, close).
type SessionIDRequest struct {
	ID string `json:"id"`
}

// Validate checks a session id.
func (r *SessionIDRequest) Validate(l Limits) error {
	return l.checkToken("session id", r.ID, true)
}

// CampaignRequest runs for leader of an election (Locker.Campaign).
type CampaignRequest struct {
	Election string `json:"election"`
	Value    string `json:"value"`
	Session  string `json:"session"`
	// Token is the campaign's secret identity; empty lets the server
	// choose one. A client that retries a campaign sends the same token.
	Token string `json:"token,omitempty"`
}

// ElectionTokenBytes bounds a campaign token: the server derives the
// election lock's owner from the value and a digest of the token, so the
// value may use all of MaxOwnerBytes but ElectionOwnerOverhead.
const (
	ElectionTokenBytes    = 128
	ElectionOwnerOverhead = 33
)

// Validate checks a campaign.
func (r *CampaignRequest) Validate(l Limits) error {
	if err := l.checkName("election", r.Election); err != nil {
		return err
	}
	if err := checkElection(l, r.Value, r.Token, false); err != nil {
		return err
	}
	return l.checkToken("session", r.Session, true)
}

func checkElection(l Limits, value, token string, tokenRequired bool) error {
	if value == "" {
		return badRequest("value is required")
	}
	if strings.IndexByte(value, 0) >= 0 {
		return badRequest("value contains a NUL byte")
	}
	if max := l.MaxOwnerBytes - ElectionOwnerOverhead; len(value) > max {
		return fmt.Errorf("%w: value of %d bytes is over the limit of %d bytes", ErrLimit, len(value), max)
	}
	if token == "" && tokenRequired {
		return fmt.Errorf("%w: the leadership's token is required", ErrNotOwner)
	}
	if len(token) > ElectionTokenBytes {
		return fmt.Errorf("%w: token of %d bytes is over the limit of %d bytes", ErrLimit, len(token), ElectionTokenBytes)
	}
	return nil
}

// ResignRequest steps down from an election (Locker.Resign).
type ResignRequest struct {
	Election string `json:"election"`
	Value    string `json:"value"`
	Token    string `json:"token"`
}

// Validate checks a resign. A missing token is ErrNotOwner: the value
// alone never ends a leadership.
func (r *ResignRequest) Validate(l Limits) error {
	if err := l.checkName("election", r.Election); err != nil {
		return err
	}
	return checkElection(l, r.Value, r.Token, true)
}

// ProclaimRequest changes a leader's value (Locker.Proclaim).
type ProclaimRequest struct {
	Election string `json:"election"`
	Value    string `json:"value"` // the value the leadership has now
	Token    string `json:"token"`
	NewValue string `json:"new_value"`
}

// Validate checks a proclaim.
func (r *ProclaimRequest) Validate(l Limits) error {
	if err := l.checkName("election", r.Election); err != nil {
		return err
	}
	if err := checkElection(l, r.Value, r.Token, true); err != nil {
		return err
	}
	if err := checkElection(l, r.NewValue, r.Token, true); err != nil {
		return fmt.Errorf("new value: %w", err)
	}
	return nil
}

// FenceCheckRequest is CheckAndAdvance (POST /v1/fence/check;
// Locker.FenceCheck). A token above the highest fence the cluster ever
// issued is refused by the state machine (ErrBadRequest), which alone
// knows that fence.
type FenceCheckRequest struct {
	Resource string `json:"resource"`
	Token    uint64 `json:"token"`
}

// Validate checks a fence check's resource name.
func (r *FenceCheckRequest) Validate(l Limits) error {
	return l.checkName("resource", r.Resource)
}
