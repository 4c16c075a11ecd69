package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// writeResults writes OUT/NAME.jsonl (every record) and OUT/NAME.md
// (medians per configuration).
func writeResults(o options, rep *report) error {
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	var jl strings.Builder
	for _, r := range rep.recs {
		b, err := json.Marshal(r)
		if err != nil {
			return err
		}
		jl.Write(b)
		jl.WriteByte('\n')
	}
	if err := os.WriteFile(filepath.Join(o.out, o.name+".jsonl"), []byte(jl.String()), 0o644); err != nil {
		return err
	}
	md := markdown(o, rep.recs)
	if err := os.WriteFile(filepath.Join(o.out, o.name+".md"), []byte(md), 0o644); err != nil {
		return err
	}
	fmt.Print(md)
	return nil
}

func markdown(o options, recs []record) string {
	var b strings.Builder
	meta := recs[0].Meta
	end := map[string]string{}
	if last := recs[len(recs)-1]; last.Type == "end" {
		end = last.Meta
	}
	fmt.Fprintf(&b, "# multiraft: N raft groups over one listener per node\n\n")
	fmt.Fprintf(&b, "Written by `bench/cmd/multiraft` (see docs/SCALING.md for what it means).\n\n")
	fmt.Fprintf(&b, "- when: %s to %s\n- command (in `bench/`): `%s`\n", meta["time"], end["time"], meta["command"])
	fmt.Fprintf(&b, "- machine: %s cores, %s, kernel %s, %s; load average %s at the start, %s at the end\n",
		meta["nproc"], meta["cpu_model"], meta["kernel"], meta["go"], meta["loadavg"], end["loadavg"])
	fmt.Fprintf(&b, "- %d nodes in one process, log store %s, medians of %d rounds (configurations alternate within a round)\n\n", o.nodes, meta["log_store"], o.rounds)
	for _, r := range recs {
		if r.Type == "fsync" {
			b.WriteString("Disk under the data directories: 4 KiB append + fdatasync pairs per second, all writers together, each on its own file:\n\n| writers | 1 | 3 | 6 | 12 |\n|---|---|---|---|---|\n|  fsyncs/s |")
			for _, k := range []int{1, 3, 6, 12} {
				fmt.Fprintf(&b, " %.0f |", r.Metrics[fmt.Sprintf("fsyncs_per_s_%d_writers", k)])
			}
			b.WriteString("\n\n")
		}
	}

	if has(recs, "idle") {
		fmt.Fprintf(&b, "## Idle groups (settle %s, window %s)\n\n", o.settle, o.window)
		b.WriteString("Per node: the process's CPU divided by the nodes; every node stores every entry of its groups.\n\n")
		b.WriteString("| configuration | CPU cores per node | × 1 group, same timings | × 1 group, default | log entries/s per node | log writes (fsyncs)/s per node | disk bytes/s per node | write(2) bytes/s per node | RSS MiB (process) | heap in use MiB | goroutines | runs |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n")
		def, _ := median(recs, "idle", idleConfigName(o.idleGroups[0], "default"), "cpu_cores_per_node")
		for _, q := range o.profiles {
			base, _ := median(recs, "idle", idleConfigName(o.idleGroups[0], q), "cpu_cores_per_node")
			for _, g := range o.idleGroups {
				name := idleConfigName(g, q)
				cpu, n := median(recs, "idle", name, "cpu_cores_per_node")
				if n == 0 {
					continue
				}
				ent, _ := median(recs, "idle", name, "entries_per_s_per_node")
				lw, _ := median(recs, "idle", name, "log_writes_per_s_per_node")
				db, _ := median(recs, "idle", name, "disk_bytes_per_s_per_node")
				wb, _ := median(recs, "idle", name, "write_bytes_per_s_per_node")
				rss, _ := median(recs, "idle", name, "rss_mib_process")
				gr, _ := median(recs, "idle", name, "goroutines_process")
				heap, _ := median(recs, "idle", name, "heap_inuse_mib_process")
				ratio, rdef := "—", "—"
				if base > 0 {
					ratio = fmt.Sprintf("%.1f×", cpu/base)
				}
				if def > 0 {
					rdef = fmt.Sprintf("%.1f×", cpu/def)
				}
				fmt.Fprintf(&b, "| %s | %.4f | %s | %s | %.1f | %.1f | %s | %s | %.0f | %.0f | %.0f | %d |\n", name, cpu, ratio, rdef, ent, lw, bytes(db), bytes(wb), rss, heap, gr, n)
			}
		}
		b.WriteString("\n")
	}
	if has(recs, "throughput") {
		fmt.Fprintf(&b, "## Uncontended acquire/release (warm-up %s, window %s)\n\n", o.warmup, o.duration)
		b.WriteString("One cluster running the largest number of groups (leaders spread: group g on node g mod nodes, unless -spread-leaders=false); worker w cycles its own lock on group w mod N through that group's leader (in process).\n\n")
		b.WriteString("| groups used, workers | cycles/s (median) | × 1 group | runs | log entries/s | entries per log write | CPU cores (process) | CPU µs per cycle | log writes/s (all nodes) | errors |\n|---|---|---|---|---|---|---|---|---|---|\n")
		for _, w := range o.workers {
			base, _ := median(recs, "throughput", tpConfigName(o.tpGroups[0], w), "cycles_per_s")
			for _, g := range o.tpGroups {
				name := tpConfigName(g, w)
				cyc, n := median(recs, "throughput", name, "cycles_per_s")
				if n == 0 {
					continue
				}
				ent, _ := median(recs, "throughput", name, "entries_per_s")
				cpe, _ := median(recs, "throughput", name, "entries_per_log_write")
				cpu, _ := median(recs, "throughput", name, "cpu_cores_process")
				us, _ := median(recs, "throughput", name, "cpu_us_per_cycle")
				lw, _ := median(recs, "throughput", name, "log_writes_per_s_all")
				var runs []string
				var errs int64
				for _, r := range recs {
					if r.Type == "run" && r.Phase == "throughput" && r.Config == name {
						runs = append(runs, fmt.Sprintf("%.0f", r.Metrics["cycles_per_s"]))
						errs += r.Errors
					}
				}
				ratio := "—"
				if base > 0 {
					ratio = fmt.Sprintf("%.2f×", cyc/base)
				}
				fmt.Fprintf(&b, "| %s | %.0f | %s | %s | %.0f | %.1f | %.2f | %.0f | %.0f | %d |\n", name, cyc, ratio, strings.Join(runs, ", "), ent, cpe, cpu, us, lw, errs)
			}
		}
		b.WriteString("\nLeaders per run (group:node): ")
		var ls []string
		for _, r := range recs {
			if r.Type == "run" && r.Phase == "throughput" {
				ls = append(ls, fmt.Sprintf("r%d %s [%s]", r.Round, r.Config, strings.Join(r.Leaders, " ")))
			}
		}
		b.WriteString(strings.Join(ls, "; "))
		b.WriteString("\n")
	}
	return b.String()
}

func has(recs []record, phase string) bool {
	for _, r := range recs {
		if r.Phase == phase {
			return true
		}
	}
	return false
}

func bytes(v float64) string {
	switch {
	case v >= 1<<20:
		return fmt.Sprintf("%.2f MiB", v/(1<<20))
	case v >= 1<<10:
		return fmt.Sprintf("%.1f KiB", v/(1<<10))
	default:
		return fmt.Sprintf("%.0f B", v)
	}
}
