// Command lattrace turns the commit-path trace files of a locknode cluster
// into a per-stage latency table: where the time of one acknowledged
// write goes, from the proposal on the leader to the proposer's wake-up.
//
// The nodes must be built with `-tags lattrace` and run with
// LOCKNODE_LATTRACE=<prefix>; each writes <prefix>.<pid>. `make lattrace`
// does both for a 1-worker lockbench run and then runs this command:
//
//	lattrace <prefix>
//
// Stages are those of third_party/raft/trace.go. An entry counts when the
// leader saw it from proposal to wake-up and a follower answered for it;
// of the two followers, the one whose answer was encoded first is shown
// (that answer is the one that commits with the leader's own write).
package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Stage numbers, as in third_party/raft/trace.go.
const (
	propose      = 1
	dispatch     = 2
	leaderStored = 3
	aeSend       = 4
	aeFlushed    = 5
	fDecoded     = 6
	fLoop        = 7
	fStored      = 8
	fRespond     = 9
	fConnGot     = 10
	fRespEncoded = 11
	lGotResp     = 12
	lCommit      = 13
	fsmStart     = 14
	woken        = 15
)

var names = map[int]string{
	propose: "proposed", dispatch: "indexed by the raft loop", leaderStored: "leader's write durable",
	aeSend: "replicator sends", aeFlushed: "request on the socket", fDecoded: "follower decoded it",
	fLoop: "follower raft loop", fStored: "follower's write durable", fRespond: "follower answers",
	fConnGot: "follower transport has it", fRespEncoded: "answer encoded", lGotResp: "leader has the answer",
	lCommit: "leader knows it committed", fsmStart: "FSM applies it", woken: "proposer woken",
}

// path is the commit path in order; the follower's stages come from the
// follower that answered first.
var path = []int{propose, dispatch, aeSend, aeFlushed, fDecoded, fLoop, fStored, fRespond, fConnGot, fRespEncoded, lGotResp, lCommit, fsmStart, woken}

var followerStages = []int{fDecoded, fLoop, fStored, fRespond, fConnGot, fRespEncoded}

// marks is one process's earliest time (Unix ns) per entry index and stage.
type marks map[uint64]map[int]int64

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: lattrace <prefix>   (reads <prefix>.<pid> files written by nodes built with -tags lattrace)")
		os.Exit(2)
	}
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "lattrace:", err)
		os.Exit(1)
	}
}

func run(prefix string) error {
	files, err := filepath.Glob(prefix + ".*")
	if err != nil {
		return err
	}
	var procs []marks
	for _, f := range files {
		m, err := read(f)
		if err != nil {
			return err
		}
		procs = append(procs, m)
	}
	leader, followers := split(procs)
	if leader == nil {
		return fmt.Errorf("no trace from a leader under %s.* (built with -tags lattrace? LOCKNODE_LATTRACE set?)", prefix)
	}
	segs, total, lstore := collect(leader, followers)
	if len(total) == 0 {
		return fmt.Errorf("no entry was traced from proposal to wake-up on the leader and answered by a follower")
	}
	fmt.Printf("entries: %d (leader + %d followers)\n\n", len(total), len(followers))
	fmt.Println("| from | to | p50 µs | p90 µs | mean µs |")
	fmt.Println("|---|---|---|---|---|")
	for i := 1; i < len(path); i++ {
		v := segs[i-1]
		fmt.Printf("| %s | %s | %.1f | %.1f | %.1f |\n", names[path[i-1]], names[path[i]], pct(v, 50), pct(v, 90), mean(v))
	}
	fmt.Printf("| **%s** | **%s** | **%.1f** | %.1f | %.1f |\n", names[propose], names[woken], pct(total, 50), pct(total, 90), mean(total))
	if len(lstore) > 0 {
		fmt.Printf("\nleader's own write (indexed → durable, in parallel with replication): p50 %.1f µs, p90 %.1f µs\n", pct(lstore, 50), pct(lstore, 90))
	}
	return nil
}

// read parses "stage index unixnano" lines, keeping each stage's earliest time.
func read(name string) (marks, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	m := marks{}
	sc := bufio.NewScanner(f)
	for ln := 1; sc.Scan(); ln++ {
		fs := strings.Fields(sc.Text())
		if len(fs) != 3 {
			return nil, fmt.Errorf("%s:%d: want 3 fields, got %q", name, ln, sc.Text())
		}
		st, err1 := strconv.Atoi(fs[0])
		idx, err2 := strconv.ParseUint(fs[1], 10, 64)
		t, err3 := strconv.ParseInt(fs[2], 10, 64)
		if err1 != nil || err2 != nil || err3 != nil {
			return nil, fmt.Errorf("%s:%d: bad line %q", name, ln, sc.Text())
		}
		e := m[idx]
		if e == nil {
			e = map[int]int64{}
			m[idx] = e
		}
		// Full chunks are written by separate goroutines, so a file is
		// not in time order: keep each stage's earliest time.
		if old, seen := e[st]; !seen || t < old {
			e[st] = t
		}
	}
	return m, sc.Err()
}

// split picks the process that proposed the most entries as the leader.
func split(procs []marks) (marks, []marks) {
	best, bestN := -1, 0
	for i, m := range procs {
		n := 0
		for _, e := range m {
			if _, ok := e[propose]; ok {
				n++
			}
		}
		if n > bestN {
			best, bestN = i, n
		}
	}
	if best < 0 {
		return nil, procs
	}
	return procs[best], slices.Delete(slices.Clone(procs), best, best+1)
}

// collect returns, in µs, each path segment's samples, the whole path's,
// and the leader's own write time.
func collect(leader marks, followers []marks) ([][]float64, []float64, []float64) {
	segs := make([][]float64, len(path)-1)
	var total, lstore []float64
	for idx, e := range leader {
		var first map[int]int64
		for _, f := range followers {
			fe := f[idx]
			t, ok := fe[fRespEncoded]
			if !ok || t < e[propose] || t > e[woken] {
				continue // no answer, or another run's entry with this index
			}
			if first == nil || t < first[fRespEncoded] {
				first = fe
			}
		}
		if first == nil {
			continue
		}
		m := map[int]int64{}
		for k, v := range e {
			m[k] = v
		}
		for _, k := range followerStages {
			if t, ok := first[k]; ok {
				m[k] = t
			}
		}
		complete := true
		for _, k := range path {
			if _, ok := m[k]; !ok {
				complete = false
				break
			}
		}
		if !complete {
			continue
		}
		for i := 1; i < len(path); i++ {
			segs[i-1] = append(segs[i-1], float64(m[path[i]]-m[path[i-1]])/1e3)
		}
		total = append(total, float64(m[woken]-m[propose])/1e3)
		if t, ok := e[leaderStored]; ok {
			lstore = append(lstore, float64(t-e[dispatch])/1e3)
		}
	}
	return segs, total, lstore
}

func pct(v []float64, p int) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return s[(len(s)-1)*p/100]
}

func mean(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	var sum float64
	for _, x := range v {
		sum += x
	}
	return sum / float64(len(v))
}
