package fsm

import (
	"bytes"
	"fmt"
	"reflect"
	"testing"
)

// SkipRenewalChanges changes output only: two tables applying the same
// batches of renewals, one leaving the renewals' change events out, hold
// the same state after every entry and answer alike; the quiet one emits
// every other event the loud one does (keyspace notifications, a due
// expiry's release and change before the renewals) and no change of a
// renewed key.
func TestSkipRenewalChangesOutputOnly(t *testing.T) {
	loud, idx := renewTable(t, true)
	quiet, _ := renewTable(t, true)
	quiet.SkipRenewalChanges(true)
	step := func(c *Command, at int64) (Result, Result) {
		t.Helper()
		*idx++
		c.Time = at
		a, b := loud.Apply(*idx, c), quiet.Apply(*idx, c)
		if fmt.Sprint(a.Err) != fmt.Sprint(b.Err) || !reflect.DeepEqual(a.Reply, b.Reply) || len(a.Batch) != len(b.Batch) {
			t.Fatalf("entry %d answers differ: %+v / %+v", *idx, a, b)
		}
		for i := range a.Batch {
			x, y := a.Batch[i], b.Batch[i]
			if fmt.Sprint(x.Err) != fmt.Sprint(y.Err) || !reflect.DeepEqual(x.Reply, y.Reply) || x.Deadline != y.Deadline || x.Index != y.Index {
				t.Fatalf("entry %d renewal %d: %+v / %+v", *idx, i, x, y)
			}
		}
		if !bytes.Equal(snap(t, loud), snap(t, quiet)) {
			t.Fatalf("entry %d: the tables differ", *idx)
		}
		return a, b
	}
	for _, tab := range []*Table{loud, quiet} {
		tab.SetKeyspaceEvents(true)
	}
	step(&Command{Op: OpScriptLoad, Script: []byte(touchScriptForTest)}, 1000)
	step(&Command{Op: OpRedis, Args: bargs("SET", "v", "x", "PX", "5000")}, 1000)
	step(&Command{Op: OpRedis, Args: bargs("SET", "l", "tok", "NX", "PX", "5000")}, 1000)
	sha := ScriptSHA([]byte(touchScriptForTest))
	renewals := func(req string) *Command {
		return batchOf(
			&Command{Op: OpExtend, Key: "a", Owner: "o1", TTL: 10000, ReqID: req + "a"},
			&Command{Op: OpExtend, Key: "c", Owner: "o3", TTL: 10000}, // c's lease ran out at 1100
			&Command{Op: OpSessionKeepAlive, Session: "s1"},
			&Command{Op: OpRedis, Args: bargs("PEXPIRE", "v", "5000")},
			&Command{Op: OpEvalSHA, Key: sha, KeysB: bargs("l"), Args: bargs("tok", "5000")},
			&Command{Op: OpEvalSHA, Key: sha, KeysB: bargs("l"), Args: bargs("thief", "5000")},
			&Command{Op: OpExtend, Key: "a", Owner: "o1", TTL: 10000, ReqID: req + "a"}, // answered once
		)
	}
	a, b := step(renewals("r1"), 2000)
	if len(a.Batch) != 7 || a.Batch[0].Err != nil || a.Batch[1].Err == nil || a.Batch[4].Reply.Int != 1 || a.Batch[5].Reply.Int != 0 {
		t.Fatalf("renewals: %+v", a.Batch)
	}
	changes := func(evs []Event) (n int) {
		for _, e := range evs {
			if e.Kind == EvChanged || e.Kind == EvValueChanged {
				n++
			}
		}
		return n
	}
	var others []Event
	for _, e := range a.Events {
		if e.Kind != EvChanged && e.Kind != EvValueChanged || e.Key == "c" {
			others = append(others, e) // what the quiet table still emits
		}
	}
	if changes(a.Events) != 4 || !reflect.DeepEqual(b.Events, others) {
		t.Fatalf("events:\nloud  %+v\nquiet %+v\nwant  %+v", a.Events, b.Events, others)
	}
	var expired, expire bool
	for _, e := range b.Events {
		expired = expired || e.Kind == EvReleased && e.Key == "c"
		expire = expire || e.Kind == EvKeyspace && e.Message == NotifyExpire && e.Key == "l"
	}
	if !expired || !expire {
		t.Fatalf("the quiet table left out other events: %+v", b.Events)
	}
	// Switched off again, the next batch reports its changes (a's, v's
	// and l's: c is gone, the thief and the repeated request change
	// nothing).
	quiet.SkipRenewalChanges(false)
	a, b = step(renewals("r2"), 3000)
	if !reflect.DeepEqual(a.Events, b.Events) || changes(b.Events) != 3 {
		t.Fatalf("events after the switch:\nloud  %+v\nquiet %+v", a.Events, b.Events)
	}
}
