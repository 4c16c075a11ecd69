package cluster

import (
	"context"
	"encoding/binary"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/fsm"
)

// TestForwardQueueNext cuts the forwarding queue into batches: in order,
// at most maxForwardBatch commands and maxForwardBatchBytes of
// encodings, a larger command alone; the empty queue stops the sender.
func TestForwardQueueNext(t *testing.T) {
	const mb = 1 << 20
	many := make([]int, maxForwardBatch+3)
	for i := range many {
		many[i] = 10
	}
	tests := []struct {
		name  string
		sizes []int // the queued commands' encoded sizes
		want  []int // the batches' lengths
	}{
		{"empty", nil, nil},
		{"a few small ones go together", []int{10, 20, 30}, []int{3}},
		{"the count bound", many, []int{maxForwardBatch, 3}},
		{"the byte bound", []int{3 * mb, 2 * mb, mb}, []int{1, 2}},
		{"a large command goes alone", []int{mb, 5 * mb, 10}, []int{1, 1, 1}},
		{"exactly the byte bound fits", []int{2 * mb, 2 * mb}, []int{2}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q := &forwardQueue{sending: true}
			for _, s := range tc.sizes {
				q.items = append(q.items, &forwardItem{req: make([]byte, s)})
			}
			var got []int
			next := 0
			for {
				b := q.next(func() {})
				if b == nil {
					break
				}
				for _, it := range b {
					if len(it.req) != tc.sizes[next] {
						t.Fatalf("command %d out of order (size %d)", next, len(it.req))
					}
					next++
				}
				got = append(got, len(b))
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("batches %v, want %v", got, tc.want)
			}
			if q.sending || len(q.items) != 0 {
				t.Fatalf("after the last batch: sending %v, %d queued", q.sending, len(q.items))
			}
		})
	}
}

// leaderAnswer builds the leader's answer to a batch call: the count,
// then each command's status and body.
type leaderAnswer struct {
	st   byte
	body []byte
}

func batchAnswer(count int, items []leaderAnswer, tail ...uint64) []byte {
	b := binary.AppendUvarint(nil, uint64(count))
	for _, it := range items {
		b = append(b, it.st)
		b = binary.AppendUvarint(b, uint64(len(it.body)))
		b = append(b, it.body...)
	}
	for _, v := range tail {
		b = binary.AppendUvarint(b, v)
	}
	return b
}

func okAnswer(idx uint64) leaderAnswer {
	return leaderAnswer{stOK, fsm.AppendResult(nil, &fsm.Result{Index: idx, Fence: idx})}
}

// TestForwarderCompletesBatch hands the forwarder a leader's answers to
// a batch, as the transport would: a malformed answer fails the call
// (and completes nothing: forwardBatch fails each command then); each
// well-formed answer completes its command, a result only once this node
// applied it, with the outcome Apply's retries branch on.
func TestForwarderCompletesBatch(t *testing.T) {
	type want struct {
		index uint64
		oc    outcome
		err   error  // errors.Is; nil: none
		text  string // the error's text contains it
	}
	tests := []struct {
		name    string
		answers []leaderAnswer
		count   int      // the answer's count; -1: len(answers)
		tail    []uint64 // after the answers (the commit hint, when hinted)
		hinted  bool
		callErr error // the call's error (errBadRPC)
		want    []want
	}{
		{name: "count differs from the batch", answers: []leaderAnswer{okAnswer(3)}, count: 2, callErr: errBadRPC},
		{name: "unknown status", answers: []leaderAnswer{{9, nil}}, count: -1, callErr: errBadRPC},
		{name: "bytes after the answers", answers: []leaderAnswer{okAnswer(3)}, count: -1, tail: []uint64{7}, callErr: errBadRPC},
		{name: "a hint past the batch's last entry", answers: []leaderAnswer{okAnswer(3)}, count: -1, tail: []uint64{4, 1}, hinted: true, callErr: errBadRPC},
		{name: "a result that does not decode", answers: []leaderAnswer{{stOK, []byte{0xff}}}, count: -1, callErr: errBadRPC},
		{name: "each command its own answer", count: -1, answers: []leaderAnswer{
			okAnswer(7),
			{stNotLeader, nil},
			{stLost, nil},
			{stError, []byte("boom")},
			okAnswer(6),
		}, want: []want{
			{index: 7, oc: outcomeDone},
			{oc: outcomeNotReached, err: api.ErrNoLeader},
			{oc: outcomeUnknown, err: ErrUnknownOutcome},
			{oc: outcomeDone, text: "boom"},
			{index: 6, oc: outcomeDone},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := partNode(t, SystemClock)
			f := n.forwarder
			count := tc.count
			if count < 0 {
				count = len(tc.answers)
			}
			batch := make([]*forwardItem, count)
			for i := range batch {
				batch[i] = &forwardItem{cmd: &fsm.Command{Op: fsm.OpTick}, reply: make(chan forwardAnswer, 1)}
			}
			err := f.completeForwarded(batch, batchAnswer(count, tc.answers, tc.tail...), 0, tc.hinted)
			if !errors.Is(err, tc.callErr) || (tc.callErr == nil) != (err == nil) {
				t.Fatalf("completeForwarded = %v, want %v", err, tc.callErr)
			}
			if err != nil {
				for i, it := range batch {
					if len(it.reply) != 0 {
						t.Fatalf("command %d answered although the call failed", i)
					}
				}
				return
			}
			// Nothing is answered before this node applied the batch.
			if len(batch[0].reply) != 0 {
				t.Fatal("answered before this node applied the entry")
			}
			n.setApplied(7, 1, false)
			for i, w := range tc.want {
				var a forwardAnswer
				select {
				case a = <-batch[i].reply:
				case <-time.After(10 * time.Second):
					t.Fatalf("command %d: no answer after the apply", i)
				}
				if a.oc != w.oc || a.res.Index != w.index {
					t.Fatalf("command %d: outcome %d index %d, want %d and %d", i, a.oc, a.res.Index, w.oc, w.index)
				}
				switch {
				case w.err != nil && !errors.Is(a.err, w.err):
					t.Fatalf("command %d: error %v, want %v", i, a.err, w.err)
				case w.text != "" && (a.err == nil || !strings.Contains(a.err.Error(), w.text)):
					t.Fatalf("command %d: error %v, want one saying %q", i, a.err, w.text)
				case w.err == nil && w.text == "" && a.err != nil:
					t.Fatalf("command %d: error %v", i, a.err)
				}
			}
		})
	}
}

// TestForwarderAsyncSlot: a forwarded ApplyAsync command's future
// completes with its answer and gives its slot of the async window back.
func TestForwarderAsyncSlot(t *testing.T) {
	n := partNode(t, SystemClock)
	f := n.forwarder
	f.asyncWindow <- struct{}{} // the slot ApplyAsync took
	it := &forwardItem{cmd: &fsm.Command{Op: fsm.OpTick}, f: &applyFuture{n: n, done: make(chan struct{})}}
	if err := f.completeForwarded([]*forwardItem{it}, batchAnswer(1, []leaderAnswer{okAnswer(2)}), 0, false); err != nil {
		t.Fatal(err)
	}
	n.setApplied(2, 1, false)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	select {
	case <-it.f.done:
	case <-ctx.Done():
		t.Fatal("future not completed after the apply")
	}
	if it.f.err != nil || it.f.res.Index != 2 {
		t.Fatalf("future: %+v, %v", it.f.res, it.f.err)
	}
	if len(f.asyncWindow) != 0 {
		t.Fatalf("%d async slots still taken", len(f.asyncWindow))
	}
}
