package cluster

import (
	"slices"
	"testing"
	"time"

	"github.com/locknode/locknode/fsm"
)

// TestWaiterLeasesDue: a waiter is due once nobody claimed it for a
// lease, counted from the term's first look when never claimed; a claim
// renews it; a new term forgets the old term's claims.
func TestWaiterLeasesDue(t *testing.T) {
	const lease = time.Second
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	q := []fsm.WaiterRef{{ID: "a", Enqueued: 1}, {ID: "b", Enqueued: 2}}
	ids := func(rs []fsm.WaiterRef) []string {
		var out []string
		for _, r := range rs {
			out = append(out, r.ID)
		}
		return out
	}
	var w waiterLeases
	l1, l2 := &leadership{}, &leadership{}
	steps := []struct {
		name  string
		claim []string // claimed just before the look
		term  *leadership
		at    int
		want  []string
	}{
		{"first look starts every lease", nil, l1, 0, nil},
		{"b claimed, a not yet due", []string{"b"}, l1, 900, nil},
		{"a due, b claimed recently", nil, l1, 1001, []string{"a"}},
		{"a's lease restarted by the cancel attempt", nil, l1, 1500, nil},
		{"b due without claims", nil, l1, 1901, []string{"b"}},
		{"a new term forgets the claims", nil, l2, 2600, nil},
		{"a new term's lease runs out", nil, l2, 3601, []string{"a", "b"}},
	}
	for _, s := range steps {
		if s.claim != nil {
			w.claim(s.term, s.claim, at(s.at))
		}
		if got := ids(w.due(s.term, q, at(s.at), lease)); !slices.Equal(got, s.want) {
			t.Fatalf("%s: due %v, want %v", s.name, got, s.want)
		}
	}
}
