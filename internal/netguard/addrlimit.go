package netguard

import (
	"net"
	"sync"
)

// AddrLimiter counts open connections by source IP and refuses one past
// Max from the same IP. It holds an entry only per IP with a connection
// open, so its memory is bounded by the port's connection cap. A nil
// *AddrLimiter, or Max < 1, admits everything.
type AddrLimiter struct {
	max  int
	mu   sync.Mutex
	open map[string]int
}

// NewAddrLimiter returns a limiter of max connections per source IP (0:
// no limit).
func NewAddrLimiter(max int) *AddrLimiter {
	return &AddrLimiter{max: max, open: make(map[string]int)}
}

// Max returns the per-IP cap (0: none).
func (a *AddrLimiter) Max() int {
	if a == nil {
		return 0
	}
	return a.max
}

// Acquire counts a connection from addr. It reports false, counting
// nothing, when addr's IP already has Max open; else release must be
// called once when the connection closes.
func (a *AddrLimiter) Acquire(addr net.Addr) (release func(), ok bool) {
	if a == nil || a.max < 1 {
		return func() {}, true
	}
	ip := HostOf(addr)
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.open[ip] >= a.max {
		return nil, false
	}
	a.open[ip]++
	var once sync.Once
	return func() {
		once.Do(func() {
			a.mu.Lock()
			if a.open[ip]--; a.open[ip] <= 0 {
				delete(a.open, ip)
			}
			a.mu.Unlock()
		})
	}, true
}

// HostOf is addr's IP (its host part; the whole string when it has none):
// the key connections are counted and throttled by.
func HostOf(addr net.Addr) string {
	if addr == nil {
		return ""
	}
	if t, ok := addr.(*net.TCPAddr); ok {
		return t.IP.String()
	}
	s := addr.String()
	if h, _, err := net.SplitHostPort(s); err == nil {
		return h
	}
	return s
}
