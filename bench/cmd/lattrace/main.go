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
//
// Entries a follower forwarded to the leader (a client connected to a
// follower) get a second table: the forwarding call, the leader's commit
// and answer, the follower learning of the commit and applying the
// entry, and the follower's answer to its caller. Two of its stages run
// side by side (the leader's answer and the AppendEntries that carries
// the commit index), so its rows are not a chain: the total is the
// forwarding follower's, from the call to its caller's answer.
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
	fwdSend      = 16
	fwdRecv      = 17
	fwdAnswer    = 18
	fwdGot       = 19
	fCommit      = 20
	fwdDone      = 21
)

var names = map[int]string{
	propose: "proposed", dispatch: "indexed by the raft loop", leaderStored: "leader's write durable",
	aeSend: "replicator sends", aeFlushed: "request on the socket", fDecoded: "follower decoded it",
	fLoop: "follower raft loop", fStored: "follower's write durable", fRespond: "follower answers",
	fConnGot: "follower transport has it", fRespEncoded: "answer encoded", lGotResp: "leader has the answer",
	lCommit: "leader knows it committed", fsmStart: "FSM applies it", woken: "proposer woken",
	fwdSend: "follower forwards it", fwdRecv: "leader receives the call", fwdAnswer: "leader's answer ready",
	fwdGot: "follower has the answer", fCommit: "follower learns the commit", fwdDone: "follower answers its caller",
}

// On the forwarding path a stage happens on the leader (onL) or on the
// forwarding follower (onF).
const (
	onL = iota
	onF
)

type at struct{ proc, stage int }

// fwdSegs are the rows of the forwarding table, each from one stage to a
// later one.
var fwdSegs = [][2]at{
	{{onF, fwdSend}, {onL, fwdRecv}},
	{{onL, fwdRecv}, {onL, propose}},
	{{onL, propose}, {onL, lCommit}},
	{{onL, lCommit}, {onL, woken}},
	{{onL, woken}, {onL, fwdAnswer}},
	{{onL, fwdAnswer}, {onF, fwdGot}},
	{{onL, lCommit}, {onF, fCommit}},
	{{onF, fCommit}, {onF, fsmStart}},
	{{onF, fwdGot}, {onF, fwdDone}},
	{{onF, fsmStart}, {onF, fwdDone}},
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
	fsegs, ftotal, fextra := collectForwarded(leader, followers)
	if len(total) == 0 && len(ftotal) == 0 {
		return fmt.Errorf("no entry was traced from proposal to wake-up on the leader and answered by a follower")
	}
	if len(total) > 0 {
		printLeaderPath(segs, total, lstore, len(followers))
	}
	if len(ftotal) > 0 {
		if len(total) > 0 {
			fmt.Println()
		}
		fmt.Printf("forwarded by a follower: %d entries\n\n", len(ftotal))
		fmt.Println("| on | from | to | p50 µs | p90 µs | mean µs |")
		fmt.Println("|---|---|---|---|---|---|")
		for i, sg := range fwdSegs {
			v := fsegs[i]
			fmt.Printf("| %s | %s | %s | %.1f | %.1f | %.1f |\n", procName(sg[0].proc, sg[1].proc), names[sg[0].stage], names[sg[1].stage], pct(v, 50), pct(v, 90), mean(v))
		}
		fmt.Printf("| F | **%s** | **%s** | **%.1f** | %.1f | %.1f |\n", names[fwdSend], names[fwdDone], pct(ftotal, 50), pct(ftotal, 90), mean(ftotal))
		fmt.Printf("\nthe follower's extra (its total less the leader's %s → %s of the same entry): p50 %.1f µs, p90 %.1f µs, mean %.1f µs\n",
			names[propose], names[woken], pct(fextra, 50), pct(fextra, 90), mean(fextra))
	}
	return nil
}

func procName(from, to int) string {
	n := [2]string{"L", "F"}
	if from == to {
		return n[from]
	}
	return n[from] + "→" + n[to]
}

// printLeaderPath prints the table of entries proposed on the leader.
func printLeaderPath(segs [][]float64, total, lstore []float64, followers int) {
	fmt.Printf("entries: %d (leader + %d followers)\n\n", len(total), followers)
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
		if _, ok := e[fwdRecv]; ok {
			continue // forwarded: collectForwarded's
		}
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

// collectForwarded returns, in µs, each fwdSegs row's samples, the
// forwarding follower's totals, and what each total adds to the leader's
// own proposal-to-wake-up of the entry, for the entries a follower
// forwarded.
func collectForwarded(leader marks, followers []marks) ([][]float64, []float64, []float64) {
	segs := make([][]float64, len(fwdSegs))
	var total, extra []float64
	for idx, e := range leader {
		recv, ok := e[fwdRecv]
		if !ok {
			continue
		}
		var fe map[int]int64
		for _, f := range followers {
			c := f[idx]
			sent, ok1 := c[fwdSend]
			done, ok2 := c[fwdDone]
			if ok1 && ok2 && sent <= recv && done >= recv {
				fe = c
				break
			}
		}
		if fe == nil {
			continue
		}
		procs := [2]map[int]int64{e, fe}
		var row []float64
		for _, sg := range fwdSegs {
			from, ok1 := procs[sg[0].proc][sg[0].stage]
			to, ok2 := procs[sg[1].proc][sg[1].stage]
			if !ok1 || !ok2 {
				row = nil
				break
			}
			row = append(row, float64(to-from)/1e3)
		}
		if row == nil {
			continue
		}
		for i, v := range row {
			segs[i] = append(segs[i], v)
		}
		total = append(total, float64(fe[fwdDone]-fe[fwdSend])/1e3)
		extra = append(extra, float64(fe[fwdDone]-fe[fwdSend]-(e[woken]-e[propose]))/1e3)
	}
	return segs, total, extra
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
