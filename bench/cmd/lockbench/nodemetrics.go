package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Counters read from each node's /metrics around a workload phase, to
// say where a placement's time goes: how many commands a follower's
// forwarding call carries, and how many commands the leader's log write
// (one fsync) carries.
var scrapedCounters = []string{
	"locknode_forward_calls_total",     // follower → leader calls, every kind
	"locknode_forwarded_total",         // commands those calls carried
	"locknode_proposals_total",         // commands proposed (on the leader)
	"locknode_log_store_seconds_count", // log store batches (one fsync each)
	"locknode_log_store_seconds_sum",
	"process_cpu_seconds_total", // the node process's CPU (user + system)
	"locknode_applied_index",    // the raft index (gauge): log entries of every kind
	"locknode_renewals_batched_total",
}

// parseCounters sums each wanted series over its labels in a Prometheus
// text exposition.
func parseCounters(r io.Reader, want []string) (map[string]float64, error) {
	out := map[string]float64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		name, rest, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		if i := strings.IndexByte(name, '{'); i >= 0 {
			// A label value may hold a space: the value follows the '}'.
			end := strings.LastIndexByte(line, '}')
			if end < 0 {
				continue
			}
			name, rest = line[:i], strings.TrimSpace(line[end+1:])
		}
		if !contains(want, name) {
			continue
		}
		// Proposals are also kept by op ("locknode_proposals_total/acquire"):
		// which commands a placement adds.
		perOp := ""
		if name == "locknode_proposals_total" {
			if _, v, ok := strings.Cut(line, `op="`); ok {
				if op, _, ok := strings.Cut(v, `"`); ok {
					perOp = name + "/" + op
				}
			}
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			return nil, fmt.Errorf("metric %s: %w", name, err)
		}
		out[name] += v
		if perOp != "" {
			out[perOp] += v
		}
	}
	return out, sc.Err()
}

// nodeCounters reads scrapedCounters from node i.
func (c *lnCluster) nodeCounters(ctx context.Context, i int) (map[string]float64, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, c.scheme()+c.nodes[i].http+"/metrics", nil)
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return nil, fmt.Errorf("GET /metrics: status %d", resp.StatusCode)
	}
	return parseCounters(resp.Body, scrapedCounters)
}

// clusterSample is every node's counters at one moment, and the leader.
type clusterSample struct {
	at     time.Time
	leader int
	nodes  []map[string]float64
}

func (c *lnCluster) sample(ctx context.Context) (clusterSample, error) {
	s := clusterSample{at: time.Now()}
	l, err := c.leader(ctx)
	if err != nil {
		return s, err
	}
	s.leader = l
	for i := range c.nodes {
		m, err := c.nodeCounters(ctx, i)
		if err != nil {
			return s, err
		}
		s.nodes = append(s.nodes, m)
	}
	return s, nil
}

// addPathMetrics adds to m what happened between two samples with the
// same leader: forwarding calls per second and commands per call over
// the followers, and the leader's log writes per second, commands per
// write and mean write time (fsync included).
func addPathMetrics(m map[string]float64, a, b clusterSample) {
	if a.leader != b.leader || len(a.nodes) != len(b.nodes) {
		return
	}
	secs := b.at.Sub(a.at).Seconds()
	d := func(i int, k string) float64 { return b.nodes[i][k] - a.nodes[i][k] }
	var calls, cmds float64
	for i := range a.nodes {
		if i != a.leader {
			calls += d(i, "locknode_forward_calls_total")
			cmds += d(i, "locknode_forwarded_total")
		}
	}
	m["fwd_calls_per_s"] = calls / secs
	m["fwd_cmds_per_call"] = safeDiv(cmds, calls)
	writes := d(a.leader, "locknode_log_store_seconds_count")
	m["leader_log_writes_per_s"] = writes / secs
	m["leader_cmds_per_log_write"] = safeDiv(d(a.leader, "locknode_proposals_total"), writes)
	// Log entries the leader proposed (commands; an OpBatchRenew entry is
	// one) and the raft index's advance (every entry kind).
	m["leader_entries_per_s"] = d(a.leader, "locknode_proposals_total") / secs
	m["raft_index_per_s"] = d(a.leader, "locknode_applied_index") / secs
	m["renewals_batched_per_s"] = d(a.leader, "locknode_renewals_batched_total") / secs
	m["leader_log_write_mean_ms"] = 1000 * safeDiv(d(a.leader, "locknode_log_store_seconds_sum"), writes)
	// CPU the nodes used, in cores, and per operation of the phase: a
	// placement that needs more CPU per operation does fewer where the
	// nodes share the machine's cores.
	var cpu float64
	for i := range a.nodes {
		cpu += d(i, "process_cpu_seconds_total")
	}
	m["nodes_cpu_cores"] = cpu / secs
	m["leader_cpu_cores"] = d(a.leader, "process_cpu_seconds_total") / secs
	for k := range b.nodes[b.leader] {
		if op, ok := strings.CutPrefix(k, "locknode_proposals_total/"); ok {
			m["leader_proposed_"+op+"_per_s"] = d(a.leader, k) / secs
		}
	}
}
