package main

import (
	"slices"
	"strings"
	"testing"
)

func TestFailoverCases(t *testing.T) {
	for _, tc := range []struct {
		names  []string
		def    string
		labels []string
	}{
		{[]string{"locknode-resp", "locknode-http"}, "spread", []string{"locknode-http"}},
		{allBackends, "spread", []string{"locknode-http", "locknode-http@leader", "locknode-http@follower", "locknode-resp@follower"}},
		// A pinned placement equal to -targets is the unsuffixed backend.
		{[]string{"locknode-resp@leader", "locknode-http@follower"}, "leader", []string{"locknode-http", "locknode-http@follower"}},
		{[]string{"locknode-resp"}, "follower", []string{"locknode-http", "locknode-resp"}},
		{[]string{"redis", "etcd-3node"}, "spread", nil},
		// A baseline build does not run the failover workload.
		{[]string{"locknode-resp@follower~base", "locknode-resp@leader"}, "spread", []string{"locknode-http@leader"}},
	} {
		var labels []string
		for _, c := range failoverCases(tc.names, tc.def) {
			labels = append(labels, c.label)
			if c.resp != strings.HasPrefix(c.label, "locknode-resp") || (c.resp && c.mode != "follower") {
				t.Errorf("failoverCases(%v, %s): case %+v", tc.names, tc.def, c)
			}
		}
		if !slices.Equal(labels, tc.labels) {
			t.Errorf("failoverCases(%v, %s) = %v; want %v", tc.names, tc.def, labels, tc.labels)
		}
	}
}

func TestHeadlineRatiosAndTargets(t *testing.T) {
	r := &report{opts: &options{runs: 1, contended: 16, scriptWorkers: 16, concurrency: "1,64"},
		backends: []string{"locknode-resp@leader", "locknode-resp@follower", "etcd-3node"}}
	r.opts.settings.lnTargets = "spread"
	add := func(be, w string, kv ...any) {
		m := map[string]float64{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1].(float64)
		}
		r.add(result{Backend: be, Workload: w, Run: 1, Metrics: m})
	}
	add("etcd-3node", "uncontended-c64", "cycles_per_s", 1000.0)
	add("locknode-resp@leader", "uncontended-c64", "cycles_per_s", 5000.0)
	add("locknode-resp@follower", "uncontended-c64", "cycles_per_s", 3000.0)
	add("locknode-resp@leader", "uncontended-c1", "acquire_p50_ms", 1.0)
	add("locknode-resp@follower", "uncontended-c1", "acquire_p50_ms", 1.3)
	add("locknode-http@follower", "failover", "next_grant_ms", 400.0, "all_granted_ms", 1400.0)
	r.runs = append(r.runs, result{Backend: "locknode-http@follower", Workload: "failover", Run: 2,
		Metrics: map[string]float64{"next_grant_ms": 600.0, "all_granted_ms": 1600.0}})
	med := r.medians()
	if got := med[[2]string{"locknode-http@follower", "failover"}].Metrics; got["runs_all_granted_within_1500ms"] != 1 || got["all_granted_ms_max"] != 1600 {
		t.Errorf("failover medians = %v; want 1 run within 1.5 s, worst 1600 ms", got)
	}
	met := map[string]string{}
	for _, x := range r.targets(med) {
		v := "not measured"
		if x.Met != nil {
			v = map[bool]string{true: "yes", false: "no"}[*x.Met]
		}
		met[x.Name] = v
	}
	for name, want := range map[string]string{
		"locknode-resp@leader uncontended 64 vs etcd 3-node":                 "yes", // 5×
		"locknode-resp@follower uncontended 64 vs etcd 3-node":               "no",  // 3×
		"locknode-resp follower vs leader: 1 worker acquire p50":             "no",  // 1.3× > 1.2×
		"locknode-resp follower vs leader: uncontended 64 cycles/s":          "no",  // 0.6×
		"locknode-http follower vs leader: uncontended 64 cycles/s":          "not measured",
		"locknode-http@follower failover every worker granted again ≤ 1.5 s": "no", // 1 of 2 runs
		"locknode-http@follower failover next grant p50":                     "yes",
	} {
		if met[name] != want {
			t.Errorf("target %q: met %q, want %q", name, met[name], want)
		}
	}
	var b strings.Builder
	r.headline(&b, med)
	if !strings.Contains(b.String(), "| locknode-resp@follower | follower | 1.300 | 3000 | 3.00× |") {
		t.Errorf("headline lacks the follower row with its etcd ratio:\n%s", b.String())
	}
}

func TestParseCounters(t *testing.T) {
	text := `# HELP locknode_forward_calls_total Requests this node sent to the leader, by kind.
# TYPE locknode_forward_calls_total counter
locknode_forward_calls_total{kind="apply"} 3
locknode_forward_calls_total{kind="apply_batch"} 40
locknode_forwarded_total 250
locknode_forwarded_totally 9
locknode_log_store_seconds_bucket{le="0.001"} 7
locknode_log_store_seconds_sum 0.5
locknode_log_store_seconds_count 100
locknode_proposals_total{op="a b"} 1e3
`
	got, err := parseCounters(strings.NewReader(text), scrapedCounters)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"locknode_forward_calls_total": 43, "locknode_forwarded_total": 250,
		"locknode_log_store_seconds_sum": 0.5, "locknode_log_store_seconds_count": 100, "locknode_proposals_total": 1000,
		"locknode_proposals_total/a b": 1000}
	if len(got) != len(want) {
		t.Errorf("parseCounters = %v; want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v; want %v", k, got[k], v)
		}
	}
}
