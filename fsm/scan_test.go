package fsm

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"testing"
)

func keyNames(es []KeyEntry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.Key
	}
	sort.Strings(out)
	return out
}

func TestKeysListsWhatRedisClientsSee(t *testing.T) {
	r := newRT(t)
	r.do("SET", "s", "v")
	r.do("SET", "ttl", "v", "PX", "500")
	r.do("SET", "lock", "tok", "NX", "PX", "1000") // a lock
	r.do("HSET", "h", "f", "v")
	r.do("SET", "gone", "v", "PX", "100")
	got := map[string]KeyEntry{}
	for _, e := range r.t.Keys(r.now + 200) {
		got[e.Key] = e
	}
	want := map[string]KeyEntry{
		"s":    {Key: "s", Type: "string"},
		"ttl":  {Key: "ttl", Type: "string", Expires: true},
		"lock": {Key: "lock", Type: "string", Expires: true},
		"h":    {Key: "h", Type: "hash"},
	}
	if !maps.Equal(got, want) {
		t.Fatalf("Keys at +200ms = %v, want %v", got, want)
	}
	if n, exp := r.t.KeyCount(r.now + 200); n != 4 || exp != 2 {
		t.Fatalf("KeyCount at +200ms = %d, %d; want 4, 2", n, exp)
	}
	// Past the lock's lease the lock is gone for Redis clients, as TYPE says.
	if names := keyNames(r.t.Keys(r.now + 1000)); !slices.Equal(names, []string{"h", "s"}) {
		t.Fatalf("Keys at +1s = %v, want [h s]", names)
	}
}

// scanAll walks a whole iteration and fails on a key returned twice.
func scanAll(t *testing.T, tb *Table, now int64, count int) (keys []string, steps int) {
	t.Helper()
	seen := map[string]bool{}
	cursor := uint64(0)
	for {
		batch, next := tb.ScanKeys(now, cursor, count)
		steps++
		for _, e := range batch {
			if seen[e.Key] {
				t.Fatalf("key %q returned twice", e.Key)
			}
			if h := ScanHash(e.Key); h < cursor || (next != 0 && h >= next) {
				t.Fatalf("key %q hash %d outside step [%d, %d)", e.Key, h, cursor, next)
			}
			seen[e.Key] = true
		}
		if next == 0 {
			break
		}
		if next <= cursor {
			t.Fatalf("cursor went back: %d after %d", next, cursor)
		}
		cursor = next
	}
	return slices.Sorted(maps.Keys(seen)), steps
}

func TestScanKeysWholeIteration(t *testing.T) {
	for _, tc := range []struct {
		name      string
		keys      int
		count     int
		wantSteps int // at most
	}{
		{"empty", 0, 10, 1},
		{"one", 1, 10, 1},
		{"count-1", 50, 1, 50},
		{"count-larger-than-space", 50, 1000, 1},
		{"spread-bounds-steps", 5000, 1, ScanSpread + 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRT(t)
			var want []string
			for i := range tc.keys {
				k := fmt.Sprintf("k%05d", i)
				r.do("SET", k, "v")
				want = append(want, k)
			}
			got, steps := scanAll(t, r.t, r.now, tc.count)
			if !slices.Equal(got, want) {
				t.Fatalf("iteration returned %d keys, want %d", len(got), len(want))
			}
			if steps > tc.wantSteps {
				t.Fatalf("iteration took %d steps, want at most %d", steps, tc.wantSteps)
			}
		})
	}
}

// TestScanKeysChangesDuringIteration: keys present for the whole
// iteration are returned, deleted ones are not, whatever happens between
// steps.
func TestScanKeysChangesDuringIteration(t *testing.T) {
	r := newRT(t)
	for i := range 300 {
		r.do("SET", fmt.Sprintf("stay%d", i), "v")
		r.do("SET", fmt.Sprintf("del%d", i), "v")
	}
	seen := map[string]bool{}
	cursor := uint64(0)
	for step := 0; ; step++ {
		batch, next := r.t.ScanKeys(r.now, cursor, 7)
		for _, e := range batch {
			seen[e.Key] = true
		}
		// Between steps: delete some keys, add others.
		r.do("DEL", fmt.Sprintf("del%d", step))
		r.do("SET", fmt.Sprintf("new%d", step), "v")
		if next == 0 {
			break
		}
		cursor = next
	}
	for i := range 300 {
		if k := fmt.Sprintf("stay%d", i); !seen[k] {
			t.Fatalf("%s, present throughout, was not returned", k)
		}
	}
}

// TestScanKeysStepsCoverTheirRange: a step returns every live key whose
// hash is in [cursor, next), so continuing from next misses nothing.
func TestScanKeysStepsCoverTheirRange(t *testing.T) {
	r := newRT(t)
	for i := range 40 {
		r.do("SET", fmt.Sprintf("t%d", i), "v")
	}
	cursor := uint64(0)
	for {
		batch, next := r.t.ScanKeys(r.now, cursor, 3)
		in := map[string]bool{}
		for _, e := range batch {
			in[e.Key] = true
		}
		for k := range r.t.keys {
			h := ScanHash(k)
			if h >= cursor && (next == 0 || h < next) && !in[k] {
				t.Fatalf("step [%d,%d) left out %q", cursor, next, k)
			}
		}
		if next == 0 {
			break
		}
		cursor = next
	}
}

// BenchmarkKeyspaceWalk: the time KEYS/DBSIZE (Keys) and one SCAN step
// (ScanKeys) hold the table, per key-space size.
func BenchmarkKeyspaceWalk(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000} {
		r := newRT(b)
		for i := range n {
			r.t.Apply(uint64(i+1), &Command{Op: OpRedis, Time: r.now, Args: bargs("SET", fmt.Sprintf("key:%08d", i), "v")})
		}
		b.Run(fmt.Sprintf("Keys/%d", n), func(b *testing.B) {
			for range b.N {
				if len(r.t.Keys(r.now)) != n {
					b.Fatal("wrong count")
				}
			}
		})
		b.Run(fmt.Sprintf("ScanKeys-count10/%d", n), func(b *testing.B) {
			for range b.N {
				r.t.ScanKeys(r.now, 1<<63, 10)
			}
		})
	}
}

// TestScanKeysHashTies: two keys at one SCAN position (a real collision
// of the 40-bit position) come in the same step even with COUNT 1, so
// the step after them, which starts past that position, misses neither.
func TestScanKeysHashTies(t *testing.T) {
	const a, b = "c5839797", "c7577398" // ScanHash 847550565533 both
	if ScanHash(a) != ScanHash(b) {
		t.Fatalf("not a collision: %d, %d", ScanHash(a), ScanHash(b))
	}
	r := newRT(t)
	for _, k := range []string{a, b, "c5839796", "c7577399", "x", "y", "z"} {
		r.do("SET", k, "v")
	}
	batch, next := r.t.ScanKeys(r.now, ScanHash(a), 1)
	if names := keyNames(batch); !slices.Equal(names, []string{a, b}) || (next != 0 && next <= ScanHash(a)) {
		t.Fatalf("step at the shared position = %v, next %d; want both keys", names, next)
	}
	got, _ := scanAll(t, r.t, r.now, 1)
	if len(got) != 7 {
		t.Fatalf("whole iteration with COUNT 1 = %v", got)
	}
}
