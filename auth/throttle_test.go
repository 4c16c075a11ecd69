package auth

import (
	"fmt"
	"net"
	"strings"
	"testing"
	"time"
)

func tcpAddr(ip string, port int) net.Addr { return &net.TCPAddr{IP: net.ParseIP(ip), Port: port} }

// TestThrottleDelays: two failures answer at once, then Delay doubling
// to MaxDelay; the Disconnect-th failure of a connection disconnects.
func TestThrottleDelays(t *testing.T) {
	th := NewThrottle(ThrottleConfig{})
	want := []time.Duration{0, 0, 100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond,
		800 * time.Millisecond, 1600 * time.Millisecond, 2 * time.Second, 2 * time.Second, 2 * time.Second}
	for i, w := range want {
		v := th.Failed("resp", "u", tcpAddr("10.0.0.1", 1), i+1)
		if v.Delay != w {
			t.Errorf("failure %d: delay %v, want %v", i+1, v.Delay, w)
		}
		if v.Disconnect != (i+1 == 10) {
			t.Errorf("failure %d: disconnect %v", i+1, v.Disconnect)
		}
	}
	// Another connection from the same IP (another port): delayed by the
	// address's count from its first failure, not disconnected.
	if v := th.Failed("http", "u", tcpAddr("10.0.0.1", 2), 1); v.Delay != 2*time.Second || v.Disconnect {
		t.Errorf("same IP, new connection: %+v", v)
	}
	// Another IP: at once.
	if v := th.Failed("resp", "u", tcpAddr("10.0.0.2", 1), 1); v.Delay != 0 {
		t.Errorf("another IP: %+v", v)
	}
	var none *Throttle
	if v := none.Failed("resp", "u", nil, 100); v != (Verdict{}) {
		t.Errorf("nil throttle: %+v", v)
	}
	if v := NewThrottle(ThrottleConfig{Disconnect: -1}).Failed("resp", "u", tcpAddr("10.0.0.1", 1), 1000); v.Disconnect {
		t.Error("Disconnect -1 disconnected")
	}
}

// TestThrottleForgets: a success forgets the address at once; a quiet
// period longer than Forget does too.
func TestThrottleForgets(t *testing.T) {
	th := NewThrottle(ThrottleConfig{Forget: time.Minute})
	clock := time.Unix(1000, 0)
	th.now = func() time.Time { return clock }
	a := tcpAddr("10.0.0.1", 1)
	for i := 1; i <= 5; i++ {
		th.Failed("resp", "u", a, 1)
	}
	if v := th.Failed("resp", "u", a, 1); v.Delay == 0 {
		t.Fatal("the sixth failure of an address is not delayed")
	}
	th.Succeeded(tcpAddr("10.0.0.1", 9))
	if th.Addrs() != 0 {
		t.Fatal("a success from the IP did not forget it")
	}
	if v := th.Failed("resp", "u", a, 1); v.Delay != 0 {
		t.Fatalf("first failure after a success: %+v", v)
	}
	for i := 1; i <= 5; i++ {
		th.Failed("resp", "u", a, 1)
	}
	clock = clock.Add(time.Minute + time.Second)
	if v := th.Failed("resp", "u", a, 1); v.Delay != 0 {
		t.Fatalf("first failure after a quiet period: %+v", v)
	}
}

// TestThrottleBounded: a client with many addresses cannot grow the
// table past MaxAddrs; the least recent are forgotten, the recent kept.
func TestThrottleBounded(t *testing.T) {
	th := NewThrottle(ThrottleConfig{MaxAddrs: 100})
	for i := 0; i < 10000; i++ {
		th.Failed("resp", "u", tcpAddr(fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255), 1), 1)
	}
	if n := th.Addrs(); n != 100 {
		t.Fatalf("%d addresses remembered, want the cap 100", n)
	}
	last := tcpAddr("10.0.39.15", 1) // i = 9999
	th.Failed("resp", "u", last, 1)
	if v := th.Failed("resp", "u", last, 1); v.Delay == 0 {
		t.Fatal("the most recent address was forgotten")
	}
}

func TestLogName(t *testing.T) {
	us, err := Parse(strings.NewReader("user app on >pw ~* +@all\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := us.LogName("app"); got != "app" {
		t.Errorf("LogName(app) = %q", got)
	}
	if got := us.LogName("hunter2"); got != "(unknown)" {
		t.Errorf("LogName of a name that is no user = %q, want (unknown): it may be a password", got)
	}
}
