package fsm

import (
	"slices"
	"testing"
)

// Every change of a Redis value (not a lock) emits EvValueChanged for its
// key: written, changed in place, given a deadline, deleted, expired.
// Client-side caching invalidates on it; a read emits nothing.
func TestValueChangeEvents(t *testing.T) {
	tb := New(Config{})
	idx := uint64(0)
	run := func(now int64, args ...string) []string {
		t.Helper()
		idx++
		var b [][]byte
		for _, a := range args {
			b = append(b, []byte(a))
		}
		var op = OpRedis
		cmd := &Command{Op: op, Args: b, Time: now}
		if len(args) == 0 {
			cmd = &Command{Op: OpTick, Time: now}
		}
		r := tb.Apply(idx, cmd)
		if r.Err != nil {
			t.Fatalf("%v: %v", args, r.Err)
		}
		var keys []string
		for _, e := range r.Events {
			if e.Kind == EvValueChanged {
				keys = append(keys, e.Key)
			}
		}
		return keys
	}
	cases := []struct {
		now  int64
		args []string
		want []string
	}{
		{1, []string{"SET", "s", "v"}, []string{"s"}},
		{2, []string{"GET", "s"}, nil},
		{3, []string{"APPEND", "s", "w"}, []string{"s"}},
		{4, []string{"HSET", "h", "f", "v"}, []string{"h"}},
		{5, []string{"HSET", "h", "g", "v"}, []string{"h"}},
		{6, []string{"ZADD", "z", "1", "m"}, []string{"z"}},
		{7, []string{"MSET", "a", "1", "b", "2"}, []string{"a", "b"}},
		{8, []string{"PEXPIRE", "a", "10"}, []string{"a"}},
		{9, []string{"DEL", "b", "h"}, []string{"b", "h"}},
		{100, nil, []string{"a"}}, // a Tick past a's deadline: expired
	}
	for _, c := range cases {
		if got := run(c.now, c.args...); !slices.Equal(got, c.want) {
			t.Errorf("%v: EvValueChanged for %v, want %v", c.args, got, c.want)
		}
	}
}
