package fsm

import (
	"testing"

	"github.com/locknode/locknode/fsm/reply"
)

// Every SET PX of a lock cycle converts its expiry on every node: a valid
// one allocates nothing (the error reply is built only for a bad one),
// and a bad one still gets Redis' text.
func TestExpireAtAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes allocation")
	}
	px := []byte("30000")
	if a := testing.AllocsPerRun(200, func() {
		if at, _, ok := expireAt(px, false, true, 1000, "set"); !ok || at != 31000 {
			t.Fatalf("expireAt: %d %v", at, ok)
		}
	}); a != 0 {
		t.Errorf("expireAt allocates %.1f times per valid expiry, want 0", a)
	}
	_, r, ok := expireAt([]byte("0"), false, true, 1000, "set")
	if want := reply.NewError("ERR invalid expire time in 'set' command"); ok || r.Kind != want.Kind || r.Str != want.Str {
		t.Errorf("PX 0: %+v %v, want %+v", r, ok, want)
	}
}
