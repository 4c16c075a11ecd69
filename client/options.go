package client

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/locknode/locknode/api"
)

// DefaultLockTTL is the lease of a Lock without WithTTL.
const DefaultLockTTL = 15 * time.Second

type lockOptions struct {
	ttl       time.Duration
	wait      time.Duration
	session   *Session
	mode      string
	permits   int
	owner     string
	lockDelay time.Duration
	maxHold   time.Duration
	noCoalesc bool

	// TryLock retry (WithRetry); tries 0 means one attempt.
	tries      int
	retryDelay time.Duration
	jitter     time.Duration
	retrySet   bool

	progressTimeout time.Duration // WithProgressTimeout; 0: off
	progressSet     bool

	meta          map[string]string // WithMetadata; ours, never the caller's map
	noDefaultMeta bool              // WithoutDefaultMetadata
}

// LockOption adjusts Client.Lock, Client.TryLock and Middleware.
type LockOption func(*lockOptions)

// WithTTL sets the lease length (default DefaultLockTTL). The handle
// renews it every TTL/3; a longer TTL survives longer outages but leaves
// a crashed holder's lock unusable for longer.
func WithTTL(d time.Duration) LockOption { return func(o *lockOptions) { o.ttl = d } }

// WithWait bounds how long Lock waits (default: until ctx ends); when it
// passes Lock returns an error wrapping api.ErrWaitTimeout. In Middleware
// it turns the immediate 423 into a bounded wait.
func WithWait(d time.Duration) LockOption { return func(o *lockOptions) { o.wait = d } }

// WithSession binds the hold to s: it ends when s ends, and the handle
// becomes Lost then.
func WithSession(s *Session) LockOption { return func(o *lockOptions) { o.session = s } }

// WithShared takes a shared (reader) hold instead of an exclusive one.
func WithShared() LockOption { return func(o *lockOptions) { o.mode = api.ModeShared } }

// WithSemaphore takes one of n permits.
func WithSemaphore(n int) LockOption {
	return func(o *lockOptions) { o.mode, o.permits = api.ModeSemaphore, n }
}

// WithOwner sets the owner token (default: 128 random bits per hold).
// Two handles with one owner are one hold to the server; such locks are
// never coalesced.
func WithOwner(token string) LockOption { return func(o *lockOptions) { o.owner = token } }

// WithLockDelay keeps the key unavailable for d after this hold ends by
// expiry or session loss (not by Unlock).
func WithLockDelay(d time.Duration) LockOption { return func(o *lockOptions) { o.lockDelay = d } }

// WithMaxHold caps the hold's total life, renewals included.
func WithMaxHold(d time.Duration) LockOption { return func(o *lockOptions) { o.maxHold = d } }

// WithoutCoalescing makes this Lock call queue its own waiter on the
// server even when other goroutines of the Client wait for the same key.
func WithoutCoalescing() LockOption { return func(o *lockOptions) { o.noCoalesc = true } }

// WithRetry makes TryLock try up to attempts times in all while the key
// is held (api.ErrLocked) or in its lock delay (api.ErrLockDelay),
// sleeping delay plus a random part of up to jitter between attempts, as
// redsync's WithTries and WithRetryDelay do. Other errors end it at once,
// and so does ctx (its error is returned). The jitter spreads out
// competitors that failed together; without it they would retry in step.
// Lock and Middleware's waiting path ignore it: they queue on the server
// instead. attempts under 1, or a negative delay or jitter, are refused
// (api.ErrBadRequest).
func WithRetry(attempts int, delay, jitter time.Duration) LockOption {
	return func(o *lockOptions) { o.tries, o.retryDelay, o.jitter, o.retrySet = attempts, delay, jitter, true }
}

// WithProgressTimeout turns on hang protection: if Lock.Progress is not
// called for d (counting from the grant), the handle stops renewing and
// cancels its Context with ErrNoProgress; the hold then ends on the server
// when its lease runs out, and the handle becomes Lost at its safe
// deadline. A wedged worker so loses the lock instead of holding it
// forever. The handle does not release at once: a worker that is slow
// rather than dead keeps the lock until the safe deadline, which it can
// still see through Context, instead of sharing the resource with the next
// holder straight away. Fence your writes all the same.
// d must be positive when given (api.ErrBadRequest otherwise).
func WithProgressTimeout(d time.Duration) LockOption {
	return func(o *lockOptions) { o.progressTimeout = d; o.progressSet = true }
}

// WithMetadata adds entries to the metadata the hold carries (shown by
// Inspect, List, LOCK.INFO, the mirror and `locknode locks`): what the
// holder is doing, a ticket, a job id. The client adds this process's
// host and pid (api.MetaHost, api.MetaPID) by default; entries given
// here win over them. Several WithMetadata options add up. The whole is
// bounded by Config.Limits (api.Limits' Meta fields): past them Lock
// fails with api.ErrLimit, nothing is cut.
func WithMetadata(m map[string]string) LockOption {
	return func(o *lockOptions) {
		if len(m) == 0 {
			return
		}
		if o.meta == nil {
			o.meta = make(map[string]string, len(m))
		}
		for k, v := range m {
			o.meta[k] = v
		}
	}
}

// WithoutDefaultMetadata leaves this process's host and pid out of the
// hold's metadata (see WithMetadata; Config.NoDefaultMetadata does so for
// every lock of the Client).
func WithoutDefaultMetadata() LockOption { return func(o *lockOptions) { o.noDefaultMeta = true } }

func buildOptions(opts []LockOption) lockOptions {
	o := lockOptions{ttl: DefaultLockTTL, mode: api.ModeExclusive}
	for _, f := range opts {
		f(&o)
	}
	return o
}

// request is the acquire o asks for; cfg decides the default metadata.
func (o lockOptions) request(key string, cfg *Config) api.AcquireRequest {
	r := api.AcquireRequest{
		Key: key, Owner: o.owner, TTLMs: o.ttl.Milliseconds(), WaitMs: o.wait.Milliseconds(),
		Mode: o.mode, Permits: o.permits,
		LockDelay: o.lockDelay.Milliseconds(), MaxHoldMs: o.maxHold.Milliseconds(),
		Meta: o.meta,
	}
	if !o.noDefaultMeta && !cfg.NoDefaultMetadata {
		r.Meta = cfg.Limits.WithProcessMeta(r.Meta)
	}
	if o.mode == api.ModeExclusive {
		r.Mode = "" // the default; keeps requests minimal
	}
	if o.session != nil {
		r.Session = o.session.ID()
	}
	return r
}

// metaKey is o's metadata choice as a comparable value: names and values
// in name order, and whether the defaults are left out.
func (o lockOptions) metaKey() string {
	if len(o.meta) == 0 && !o.noDefaultMeta {
		return ""
	}
	names := make([]string, 0, len(o.meta))
	for k := range o.meta {
		names = append(names, k)
	}
	slices.Sort(names)
	var b strings.Builder
	if o.noDefaultMeta {
		b.WriteByte('-')
	}
	for _, k := range names {
		fmt.Fprintf(&b, "%q=%q;", k, o.meta[k])
	}
	return b.String()
}

// coalescible: exclusive, our own random owner per hold.
func (o lockOptions) coalescible() bool {
	return !o.noCoalesc && o.mode == api.ModeExclusive && o.owner == ""
}
