package fsm

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkBatchRenew100k applies batches of 100 redsync renewals to a
// table holding 100,000 such locks, in a random order of the keys, as
// holding many locks does on every node (each renewal's result left out,
// as on a follower), with and without the renewals' change events. ns/op
// and B/op are per renewal; the key map's lookup on a map
// this large is mostly cache misses.
func BenchmarkBatchRenew100k(b *testing.B) {
	const locks, per = 100_000, 100
	tab, idx := renewTable(b, true)
	apply := func(c *Command) Result {
		*idx++
		c.Time = 1000 + int64(*idx)
		return tab.Apply(*idx, c)
	}
	apply(&Command{Op: OpScriptLoad, Script: []byte(touchScriptForTest)})
	sha := ScriptSHA([]byte(touchScriptForTest))
	key := func(i int) []byte { return []byte(fmt.Sprintf("bench/hold/%d", i)) }
	tok := func(i int) []byte { return []byte(fmt.Sprintf("tok-%d", i)) }
	for i := range locks {
		if r := apply(&Command{Op: OpRedis, Args: [][]byte{[]byte("SET"), key(i), tok(i), []byte("NX"), []byte("PX"), []byte("3000000")}}); r.Reply.Kind == 0 {
			b.Fatalf("SET %d: %+v", i, r)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	order := rng.Perm(locks)
	batches := make([]*Command, locks/per)
	for j := range batches {
		ext := make([]*Command, per)
		for k := range ext {
			i := order[j*per+k]
			ext[k] = &Command{Op: OpEvalSHA, Key: sha, KeysB: [][]byte{key(i)}, Args: [][]byte{tok(i), []byte("3000000")}}
		}
		batches[j] = batchOf(ext...)
	}
	tab.SkipBatchResults(true)
	// changes: the renewals report their leases' changes; quiet: nothing
	// on the node reads them (SkipRenewalChanges).
	for _, quiet := range []bool{false, true} {
		b.Run(map[bool]string{false: "changes", true: "quiet"}[quiet], func(b *testing.B) {
			tab.SkipRenewalChanges(quiet)
			b.ReportAllocs()
			for n := 0; n < b.N; n += per {
				if r := apply(batches[(n/per)%len(batches)]); r.Err != nil {
					b.Fatal(r.Err)
				}
			}
		})
	}
}
