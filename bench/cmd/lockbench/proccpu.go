package main

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"time"
)

// CPU per operation, for every backend alike: the server processes' and
// the harness's own user+system time from /proc/<pid>/stat over a phase,
// divided by the phase's operations. Unlike the nodes' own
// process_cpu_seconds_total it needs nothing of the server, so locknode,
// redis, Redlock and etcd are measured the same way.

// clockTicks is USER_HZ, the unit of utime and stime in /proc/<pid>/stat:
// 100 on every Linux architecture Go supports (the kernel's ABI, whatever
// CONFIG_HZ is).
const clockTicks = 100

// procCPUSeconds returns pid's user+system CPU time so far (self: the
// harness), from /proc/<pid>/stat fields 14 and 15.
func procCPUSeconds(pid int) (float64, error) {
	path := "/proc/self/stat"
	if pid > 0 {
		path = fmt.Sprintf("/proc/%d/stat", pid)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	// The command name (field 2) is in parentheses and may hold spaces:
	// count fields after its closing one.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("%s: no command field", path)
	}
	f := bytes.Fields(b[i+1:])
	// f[0] is field 3 (state): utime is field 14, stime 15.
	if len(f) < 13 {
		return 0, fmt.Errorf("%s: %d fields", path, len(f)+2)
	}
	ut, err1 := strconv.ParseUint(string(f[11]), 10, 64)
	st, err2 := strconv.ParseUint(string(f[12]), 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("%s: bad utime/stime %q %q", path, f[11], f[12])
	}
	return float64(ut+st) / clockTicks, nil
}

// serverProcs is a backend that knows the processes serving it.
type serverProcs interface{ serverPIDs() []int }

func (b *respBackend) serverPIDs() []int {
	if b.ln {
		return b.lnc.pids()
	}
	if b.redis != nil {
		return []int{b.redis.pid()}
	}
	return nil
}

func (b *lnHTTPBackend) serverPIDs() []int { return b.lnc.pids() }

func (b *redlockBackend) serverPIDs() []int { return procPIDs(b.procs) }

func (b *etcdBackend) serverPIDs() []int { return procPIDs(b.procs) }

func (c *lnCluster) pids() []int {
	if c == nil {
		return nil
	}
	var out []int
	for _, n := range c.nodes {
		if n.proc != nil {
			out = append(out, n.proc.pid())
		}
	}
	return out
}

func procPIDs(ps []*proc) []int {
	var out []int
	for _, p := range ps {
		out = append(out, p.pid())
	}
	return out
}

// cpuSample is the servers' and the harness's CPU seconds at one time.
type cpuSample struct {
	at      time.Time
	servers float64
	client  float64
	pids    []int
	err     error
}

func sampleCPU(b backend) cpuSample {
	s := cpuSample{at: time.Now()}
	sp, ok := b.(serverProcs)
	if !ok {
		s.err = fmt.Errorf("%s: server processes unknown", b.name())
		return s
	}
	s.pids = sp.serverPIDs()
	for _, pid := range s.pids {
		v, err := procCPUSeconds(pid)
		if err != nil {
			s.err = err
			return s
		}
		s.servers += v
	}
	s.client, s.err = procCPUSeconds(0)
	return s
}

// addCPUMetrics adds the servers' and the client's CPU between a and b, in
// cores and in µs per operation (the phase's first rate of cycles,
// acquisitions, pipelined commands or renewals). The interval holds the
// warm-up too; the rate is the window's, so a figure is a rate over a
// rate of the same steady load.
func addCPUMetrics(m map[string]float64, a, b cpuSample) {
	if a.err != nil || b.err != nil || len(a.pids) == 0 || !equalInts(a.pids, b.pids) {
		return
	}
	secs := b.at.Sub(a.at).Seconds()
	if secs <= 0 {
		return
	}
	m["servers_cpu_cores"] = (b.servers - a.servers) / secs
	m["client_cpu_cores"] = (b.client - a.client) / secs
	if v := opsRate(m); v > 0 {
		m["servers_cpu_us_per_op"] = 1e6 * m["servers_cpu_cores"] / v
		m["client_cpu_us_per_op"] = 1e6 * m["client_cpu_cores"] / v
	}
}

// opsRate is a phase's operations per second: the first of its rates.
func opsRate(m map[string]float64) float64 {
	for _, k := range []string{"cycles_per_s", "acquisitions_per_s", "ops_per_s", "renewals_per_s"} {
		if v := m[k]; v > 0 {
			return v
		}
	}
	return 0
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
