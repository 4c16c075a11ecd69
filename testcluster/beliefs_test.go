package testcluster

import (
	"errors"
	"testing"
)

// Each checker is fed a history that keeps its property and one that
// breaks it; the broken one must be reported with the checker's sentinel.
func TestBeliefCheckersCatch(t *testing.T) {
	b := func(key, who string, fence uint64, limit int, from, to int) Belief {
		return Belief{Key: key, Holder: who, Fence: fence, Limit: limit, From: ms(from), To: ms(to)}
	}
	cases := []struct {
		name  string
		check func() error
		want  error // nil: no violation
	}{
		{"handles one after another", func() error {
			return CheckHandles([]Belief{b("k", "a", 5, 1, 0, 10), b("k", "b", 7, 1, 10, 20), b("j", "c", 6, 1, 5, 15)})
		}, nil},
		{"two exclusive handles overlap", func() error {
			return CheckHandles([]Belief{b("k", "a", 5, 1, 0, 10), b("k", "b", 7, 1, 9, 20)})
		}, ErrTwoHolders},
		{"semaphore of two holds two", func() error {
			return CheckHandles([]Belief{b("s", "a", 5, 2, 0, 10), b("s", "b", 6, 2, 1, 20)})
		}, nil},
		{"semaphore of two holds three", func() error {
			return CheckHandles([]Belief{b("s", "a", 5, 2, 0, 10), b("s", "b", 6, 2, 1, 20), b("s", "c", 8, 2, 2, 3)})
		}, ErrTwoHolders},
		{"semaphore permit learnt late, after a later one ended", func() error {
			return CheckHandles([]Belief{b("s", "a", 7, 2, 0, 10), b("s", "b", 5, 2, 11, 20)})
		}, nil},
		{"later handle with an older fence", func() error {
			return CheckHandles([]Belief{b("k", "a", 7, 1, 0, 10), b("k", "b", 5, 1, 11, 20)})
		}, ErrTwoHolders},
		{"grant answered after it was superseded, already lost", func() error {
			// sim seeds 38 and 43: the older grant's answer arrives while
			// the newer holder believes, with Done already closed.
			return CheckHandles([]Belief{b("k", "a", 9, 1, 0, 20), b("k", "b", 5, 1, 10, 10)})
		}, nil},
		{"leadership learnt already lost, older fence", func() error {
			return CheckLeaders([]Belief{b("election/e", "a", 9, 1, 0, 20), b("election/e", "b", 5, 1, 10, 10)})
		}, nil},
		{"belief of an instant with the newer fence", func() error {
			return CheckHandles([]Belief{b("k", "a", 5, 1, 0, 20), b("k", "b", 9, 1, 10, 10)})
		}, ErrTwoHolders},
		{"belief of an instant with the older fence outlasting it", func() error {
			return CheckHandles([]Belief{b("k", "a", 9, 1, 0, 20), b("k", "b", 5, 1, 10, 11)})
		}, ErrTwoHolders},
		{"leaders take turns", func() error {
			return CheckLeaders([]Belief{b("election/e", "a", 3, 1, 0, 10), b("election/e", "b", 9, 1, 12, 20)})
		}, nil},
		{"two leaders at once", func() error {
			return CheckLeaders([]Belief{b("election/e", "a", 3, 1, 0, 10), b("election/e", "b", 3, 1, 5, 20)})
		}, ErrTwoLeaders},
		{"fences accepted in order", func() error {
			return CheckAccepted([]FenceAccept{{"r", 3, "a", ms(1)}, {"r", 3, "a", ms(2)}, {"q", 1, "c", ms(3)}, {"r", 9, "b", ms(4)}})
		}, nil},
		{"smaller fence accepted", func() error {
			return CheckAccepted([]FenceAccept{{"r", 3, "a", ms(1)}, {"r", 9, "b", ms(4)}, {"r", 3, "a", ms(5)}})
		}, ErrFenceRegress},
		{"hold ends in time", func() error {
			return CheckHoldEnds([]HoldEnd{{Key: "k", Owner: "a", TTL: ms(100), Last: ms(50), HeldSeen: ms(200), GoneSent: ms(205), EndedBy: ms(206)}}, ms(60))
		}, nil},
		{"hold still held too late", func() error {
			return CheckHoldEnds([]HoldEnd{{Key: "k", Owner: "a", TTL: ms(100), Last: ms(50), HeldSeen: ms(211), GoneSent: ms(215), EndedBy: ms(216)}}, ms(60))
		}, ErrLeaseTooLong},
		{"a read that waited is not a late hold", func() error {
			// Last seen held in time; the read that found it gone was
			// sent then too, but answered only after a leaderless spell.
			return CheckHoldEnds([]HoldEnd{{Key: "k", Owner: "a", TTL: ms(100), Last: ms(50), HeldSeen: ms(140), GoneSent: ms(160), EndedBy: ms(5000), Failed: 3}}, ms(60))
		}, nil},
		{"never seen held", func() error {
			return CheckHoldEnds([]HoldEnd{{Key: "k", Owner: "a", TTL: ms(100), Last: ms(50), GoneSent: ms(60), EndedBy: ms(5000)}}, ms(60))
		}, nil},
		{"a slow clock stretches the bound", func() error {
			// At rate 0.5 the cluster clock times (100+60) ms in 320 ms.
			return CheckHoldEnds([]HoldEnd{{Key: "k", Owner: "a", TTL: ms(100), Last: ms(50), HeldSeen: ms(360), GoneSent: ms(380), EndedBy: ms(381), Rate: 0.5}}, ms(60))
		}, nil},
		{"held past the slow clock's bound", func() error {
			return CheckHoldEnds([]HoldEnd{{Key: "k", Owner: "a", TTL: ms(100), Last: ms(50), HeldSeen: ms(380), GoneSent: ms(390), EndedBy: ms(391), Rate: 0.5}}, ms(60))
		}, ErrLeaseTooLong},
		{"leftover hold ends within its ttl", func() error {
			return CheckLeftovers(ms(1000), []Leftover{{Key: "k", Owner: "a", TTL: ms(100), EndedBy: ms(1150)}}, ms(60))
		}, nil},
		{"leftover hold outlives its ttl", func() error {
			return CheckLeftovers(ms(1000), []Leftover{{Key: "k", Owner: "a", TTL: ms(100), EndedBy: ms(1170)}}, ms(60))
		}, ErrOrphan},
		{"waiter queued after every client stopped", func() error {
			return CheckLeftovers(ms(1000), []Leftover{{Key: "k", Waiters: 1}}, ms(60))
		}, ErrOrphan},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.check()
			switch {
			case tc.want == nil && err != nil:
				t.Fatalf("violation reported in a correct history: %v", err)
			case tc.want != nil && !errors.Is(err, tc.want):
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
}
