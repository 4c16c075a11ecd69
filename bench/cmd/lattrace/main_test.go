package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestCollect(t *testing.T) {
	dir := t.TempDir()
	prefix := filepath.Join(dir, "trace")
	// Entry 7 on the leader (pid 1) with every leader stage 10 µs apart;
	// follower 2 answers at 60 µs, follower 3 later (its stages must not
	// be used). Entry 8 has no follower answer and is left out.
	leader := []string{}
	for i, st := range []int{propose, dispatch, aeSend, aeFlushed, lGotResp, lCommit, fsmStart, woken} {
		at := []int64{0, 10, 20, 30, 120, 130, 140, 150}[i]
		leader = append(leader, line(st, 7, at))
	}
	leader = append(leader, line(leaderStored, 7, 90), line(propose, 8, 0), line(woken, 8, 5))
	fast := []string{line(fDecoded, 7, 40), line(fLoop, 7, 45), line(fStored, 7, 95), line(fRespond, 7, 100), line(fConnGot, 7, 101), line(fRespEncoded, 7, 110)}
	slow := []string{line(fDecoded, 7, 41), line(fLoop, 7, 46), line(fStored, 7, 300), line(fRespond, 7, 301), line(fConnGot, 7, 302), line(fRespEncoded, 7, 310)}
	for pid, ls := range map[string][]string{"1": leader, "2": fast, "3": slow} {
		if err := os.WriteFile(prefix+"."+pid, []byte(strings.Join(ls, "")), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var procs []marks
	for _, pid := range []string{"1", "2", "3"} {
		m, err := read(prefix + "." + pid)
		if err != nil {
			t.Fatal(err)
		}
		procs = append(procs, m)
	}
	l, fs := split(procs)
	if len(fs) != 2 || l[7][propose] != 0 || l[7][woken] != 150e3 {
		t.Fatalf("leader not picked: %d followers", len(fs))
	}
	segs, total, lstore := collect(l, fs)
	if len(total) != 1 || total[0] != 150 {
		t.Fatalf("total = %v, want [150] µs", total)
	}
	if len(lstore) != 1 || lstore[0] != 80 {
		t.Fatalf("leader store = %v, want [80] µs", lstore)
	}
	want := []float64{10, 10, 10, 10, 5, 50, 5, 1, 9, 10, 10, 10, 10}
	for i, w := range want {
		if len(segs[i]) != 1 || segs[i][0] != w {
			t.Errorf("segment %s -> %s = %v, want %v", names[path[i]], names[path[i+1]], segs[i], w)
		}
	}
}

func TestReadRejectsGarbage(t *testing.T) {
	for _, body := range []string{"1 2\n", "x 2 3\n", "1 2 3 4\n", "1 -2 3\n"} {
		f := filepath.Join(t.TempDir(), "t.1")
		if err := os.WriteFile(f, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := read(f); err == nil {
			t.Errorf("read(%q) succeeded", body)
		}
	}
}

// line is one trace record; at is in µs.
func line(stage int, idx uint64, at int64) string {
	return strings.Join([]string{itoa(int64(stage)), itoa(int64(idx)), itoa(at * 1e3)}, " ") + "\n"
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

func TestCollectForwarded(t *testing.T) {
	// Entry 9 forwarded by follower F (stages in µs); entry 7 proposed on
	// the leader, which only the leader table counts; entry 10 forwarded
	// but never answered by the follower, left out.
	l := marks{
		9:  {fwdRecv: 100e3, propose: 110e3, lCommit: 400e3, woken: 430e3, fwdAnswer: 440e3},
		7:  {propose: 0, woken: 50e3},
		10: {fwdRecv: 100e3, propose: 110e3, lCommit: 400e3, woken: 430e3, fwdAnswer: 440e3},
	}
	f := marks{
		9:  {fwdSend: 50e3, fwdGot: 500e3, fCommit: 480e3, fsmStart: 520e3, fwdDone: 560e3},
		10: {fwdSend: 50e3},
	}
	other := marks{9: {fwdSend: 1e3, fwdDone: 2e3}} // another run's entry 9: outside the window
	segs, total, extra := collectForwarded(l, []marks{other, f})
	if len(total) != 1 || total[0] != 510 {
		t.Fatalf("total = %v, want [510] µs", total)
	}
	if len(extra) != 1 || extra[0] != 190 { // 510 less the leader's 320
		t.Fatalf("extra = %v, want [190] µs", extra)
	}
	want := []float64{50, 10, 290, 30, 10, 60, 80, 40, 60, 40}
	if len(want) != len(fwdSegs) {
		t.Fatalf("%d rows, want %d", len(fwdSegs), len(want))
	}
	for i, w := range want {
		if len(segs[i]) != 1 || segs[i][0] != w {
			t.Errorf("row %d (%s -> %s) = %v, want %v", i, names[fwdSegs[i][0].stage], names[fwdSegs[i][1].stage], segs[i], w)
		}
	}
	if s, tot, _ := collect(l, []marks{f}); len(tot) != 0 || len(s[0]) != 0 {
		t.Errorf("leader table took forwarded entries: %v", tot)
	}
}
