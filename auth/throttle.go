package auth

import (
	"container/list"
	"context"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/locknode/locknode/internal/netguard"
)

// Defaults of the ThrottleConfig fields that are zero.
const (
	DefaultFailDelay      = 100 * time.Millisecond
	DefaultFailMaxDelay   = 2 * time.Second
	DefaultFailDisconnect = 10
	DefaultFailFreeCount  = 2
	DefaultFailForget     = time.Minute
	DefaultFailMaxAddrs   = 16384
	throttleLogEvery      = 10 * time.Second
)

// ThrottleConfig configures a Throttle. Zero fields take the defaults.
type ThrottleConfig struct {
	// FreeCount is how many failures answer at once; the next one waits
	// Delay before its answer. Default 2 (the third failure waits);
	// negative: none (the first failure waits).
	FreeCount int
	// Delay is the wait of the first delayed failure; each further one
	// doubles it up to MaxDelay. Default 100ms.
	Delay time.Duration
	// MaxDelay caps the wait. Default 2s: a guesser gets at most one try
	// per MaxDelay per connection while a client with a typo waits little.
	MaxDelay time.Duration
	// Disconnect is the failures on one connection after which it is
	// closed (RESP; on HTTP the answer says Connection: close). Default
	// 10; negative: never.
	Disconnect int
	// Forget is the quiet period after which a source address's failures
	// are forgotten (a success forgets them at once). Default 1m.
	Forget time.Duration
	// MaxAddrs bounds the source addresses remembered at once; past it the
	// one that failed least recently is forgotten, so a client with many
	// addresses cannot grow the table (each connection is still throttled
	// by its own count). Default 16384 (about 2 MiB).
	MaxAddrs int
	// Logger receives the WARN lines (at most one per 10s, with the count
	// of those held back). Nil: none.
	Logger hclog.Logger
}

// Throttle slows down password guessing: each failed authentication is
// counted on its connection and on its source address, and from the
// (FreeCount+1)th failure of either its answer waits (Delay, doubling up
// to MaxDelay). It holds no lock while a caller waits: Failed returns the
// delay and the caller waits it in its own goroutine. A nil *Throttle
// delays nothing and never disconnects.
type Throttle struct {
	cfg ThrottleConfig

	mu    sync.Mutex
	addrs map[string]*list.Element // of *addrFailures, most recent at the front
	lru   list.List

	rl  netguard.RateLog
	n   atomic.Int64     // lru.Len(), read without mu: Succeeded's fast path
	now func() time.Time // time.Now; tests move it
}

type addrFailures struct {
	addr  string
	count int
	last  time.Time
}

// NewThrottle returns a Throttle with cfg (zero fields: defaults).
func NewThrottle(cfg ThrottleConfig) *Throttle {
	switch {
	case cfg.FreeCount == 0:
		cfg.FreeCount = DefaultFailFreeCount
	case cfg.FreeCount < 0:
		cfg.FreeCount = 0
	}
	if cfg.Delay == 0 {
		cfg.Delay = DefaultFailDelay
	}
	if cfg.MaxDelay == 0 {
		cfg.MaxDelay = DefaultFailMaxDelay
	}
	if cfg.MaxDelay < cfg.Delay {
		cfg.MaxDelay = cfg.Delay
	}
	if cfg.Disconnect == 0 {
		cfg.Disconnect = DefaultFailDisconnect
	}
	if cfg.Forget == 0 {
		cfg.Forget = DefaultFailForget
	}
	if cfg.MaxAddrs == 0 {
		cfg.MaxAddrs = DefaultFailMaxAddrs
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	return &Throttle{cfg: cfg, addrs: make(map[string]*list.Element), rl: netguard.RateLog{Every: netguard.LogEvery}, now: time.Now}
}

// Config returns the effective configuration.
func (t *Throttle) Config() ThrottleConfig {
	if t == nil {
		return ThrottleConfig{}
	}
	return t.cfg
}

// Verdict is what to do with one failed authentication.
type Verdict struct {
	// Delay is how long to wait before answering (0: at once).
	Delay time.Duration
	// Disconnect says to close the connection after the answer.
	Disconnect bool
}

// Failed records a failed authentication of user from remote whose
// connection has now failed connFailures times (this one included), logs
// it (rate-limited) and returns what to do. Failures are counted by
// remote's IP. user should be LogName's: a name that is no user may be a
// password typed in the wrong field.
func (t *Throttle) Failed(proto, user string, remote net.Addr, connFailures int) Verdict {
	if t == nil {
		return Verdict{}
	}
	addr := netguard.HostOf(remote)
	now := t.now()
	t.mu.Lock()
	var a *addrFailures
	if e, ok := t.addrs[addr]; ok {
		a = e.Value.(*addrFailures)
		if now.Sub(a.last) > t.cfg.Forget {
			a.count = 0
		}
		t.lru.MoveToFront(e)
	} else {
		for t.lru.Len() >= t.cfg.MaxAddrs {
			old := t.lru.Back()
			t.lru.Remove(old)
			delete(t.addrs, old.Value.(*addrFailures).addr)
		}
		a = &addrFailures{addr: addr}
		t.addrs[addr] = t.lru.PushFront(a)
	}
	a.count++
	a.last = now
	addrCount := a.count
	t.n.Store(int64(t.lru.Len()))
	t.mu.Unlock()

	v := Verdict{Delay: t.delayFor(max(connFailures, addrCount))}
	v.Disconnect = t.cfg.Disconnect > 0 && connFailures >= t.cfg.Disconnect
	if ok, suppressed := t.rl.Allow(); ok {
		t.cfg.Logger.Warn("authentication failed", "proto", proto, "user", user, "remote", addrString(remote),
			"conn_failures", connFailures, "addr_failures", addrCount, "delay", v.Delay,
			"disconnect", v.Disconnect, "not_logged", suppressed)
	}
	return v
}

// delayFor is the wait before answering the nth failure.
func (t *Throttle) delayFor(n int) time.Duration {
	over := n - t.cfg.FreeCount
	if over < 1 {
		return 0
	}
	d := t.cfg.Delay
	for i := 1; i < over && d < t.cfg.MaxDelay; i++ {
		d *= 2
	}
	return min(d, t.cfg.MaxDelay)
}

// Succeeded forgets the failures of remote's IP.
func (t *Throttle) Succeeded(remote net.Addr) {
	if t == nil {
		return
	}
	if t.n.Load() == 0 {
		return // nothing to forget: no lock on the path of every request
	}
	addr := netguard.HostOf(remote)
	t.mu.Lock()
	if e, ok := t.addrs[addr]; ok {
		t.lru.Remove(e)
		delete(t.addrs, addr)
	}
	t.n.Store(int64(t.lru.Len()))
	t.mu.Unlock()
}

// Addrs returns how many source addresses are remembered.
func (t *Throttle) Addrs() int {
	if t == nil {
		return 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.lru.Len()
}

// Wait waits d, or until ctx ends; it reports whether the whole delay
// passed.
func Wait(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-tm.C:
		return true
	}
}

// LogName is name as a failure's log line shows it: the name when it is
// one of us's users, else "(unknown)", since a client that sends its
// password as the user name is a common mistake and logs must not keep
// passwords.
func (us *Users) LogName(name string) string {
	if us.Lookup(name) != nil {
		return name
	}
	return "(unknown)"
}

func addrString(a net.Addr) string {
	if a == nil {
		return ""
	}
	return a.String()
}
