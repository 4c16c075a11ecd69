package main

import (
	"fmt"
	"strings"
)

// cpuTable leads the markdown: for every backend and phase, the rate
// beside the CPU per operation of the servers and of the client
// (/proc/<pid>/stat, proccpu.go) and the phase's main latency at p50, p99
// and p99.9. CPU per operation is what carries over to a bigger machine;
// the rates are the user-facing figures of this one.
func (r *report) cpuTable(b *strings.Builder, med map[[2]string]*summary) {
	var rows []string
	for _, be := range r.backends {
		for _, k := range sortedKeys(med) {
			if k[0] != be {
				continue
			}
			x := med[k].Metrics
			if _, ok := x["servers_cpu_us_per_op"]; !ok {
				continue
			}
			lat := latencyPrefix(k[1])
			where := "—"
			if strings.HasPrefix(be, "locknode-") {
				where = r.placement(be)
			} else if strings.HasPrefix(be, "etcd-") {
				where = r.opts.settings.lnTargets
			}
			rows = append(rows, fmt.Sprintf("| %s | %s | %s | %s %s | %s | %s | %s | %s | %s | %s | %s |\n", be, where, k[1],
				f(opsRate(x), 0), opsUnit(x), f(x["servers_cpu_us_per_op"], 1), f(x["client_cpu_us_per_op"], 1), f(x["servers_cpu_cores"], 2),
				lat, f(x[lat+"_p50_ms"], 2), f(x[lat+"_p99_ms"], 2), f(x[lat+"_p999_ms"], 2)))
		}
	}
	if len(rows) == 0 {
		return
	}
	b.WriteString("## CPU per operation\n\n")
	b.WriteString("Servers: the user+system CPU of every server process of the backend (3 `locknode serve`, 3 etcd, 3 or 1 redis-server) " +
		"from `/proc/<pid>/stat` over the phase (warm-up included), divided by the phase's operations per second (cycles, acquisitions, " +
		"pipelined commands or renewals); client: the harness process the same way. Medians over runs.\n\n")
	b.WriteString("| backend | clients on | phase | rate | servers' CPU per op, µs | client CPU per op, µs | servers' cores | latency of | p50 ms | p99 ms | p99.9 ms |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, row := range rows {
		b.WriteString(row)
	}
	b.WriteString("\n")
}

// latencyPrefix is the latency that matters in a phase: an acquire's,
// a blocked acquire's wait, a pipeline's, a renewal request's.
func latencyPrefix(workload string) string {
	switch {
	case strings.HasPrefix(workload, "contended"):
		return "wait"
	case strings.HasPrefix(workload, "holding"):
		return "renew"
	case strings.HasPrefix(workload, "pipeline"):
		return "pipeline"
	}
	return "acquire"
}

func opsUnit(x map[string]float64) string {
	for _, k := range []string{"cycles_per_s", "acquisitions_per_s", "ops_per_s", "renewals_per_s"} {
		if x[k] > 0 {
			return map[string]string{"cycles_per_s": "cycles/s", "acquisitions_per_s": "acq/s", "ops_per_s": "ops/s", "renewals_per_s": "renewals/s"}[k]
		}
	}
	return ""
}

// holdingTable: the holding phases, with the leader's log entries.
func (r *report) holdingTable(b *strings.Builder, med map[[2]string]*summary) {
	var rows []string
	for _, be := range r.backends {
		for _, k := range sortedKeys(med) {
			if k[0] != be || !strings.HasPrefix(k[1], "holding") {
				continue
			}
			x := med[k].Metrics
			rows = append(rows, fmt.Sprintf("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %d |\n", be, k[1],
				f(x["renewals_per_s"], 0), f(x["leader_entries_per_s"], 0), f(safeDiv(x["renewals_per_s"], x["leader_entries_per_s"]), 1),
				f(x["servers_cpu_cores"], 3), f(x["servers_cpu_us_per_op"], 1), f(x["client_cpu_us_per_op"], 1),
				f(x["renew_p50_ms"], 2), f(x["renew_p99_ms"], 2), f(x["renew_p999_ms"], 2), f(x["lost"]+x["late"], 0), med[k].Errors))
		}
	}
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(b, "\n## Holding (%d locks renewed every %s: %s's renewal script in pipelines of %d, etcd lease keep-alives in streams of %d, or Go session keep-alives)\n\n",
		r.opts.hold.locks, r.opts.hold.ttl/3, r.opts.hold.script, holdBatch, holdBatch)
	b.WriteString("Entries: the commands the leader proposed (`locknode_proposals_total`; a batch of renewals is one). " +
		"Latency: one renewal request (a 100-renewal pipeline, or one keep-alive). Lost or late: renewals that found their lock gone, " +
		"plus renewals that waited for a free sender.\n\n")
	b.WriteString("| backend | phase | renewals/s | leader entries/s | renewals per entry | servers' cores | servers' CPU per renewal, µs | client CPU per renewal, µs | p50 ms | p99 ms | p99.9 ms | lost or late | errors |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, row := range rows {
		b.WriteString(row)
	}
}
