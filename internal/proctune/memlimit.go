package proctune

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/hashicorp/go-hclog"
)

// defaultMemoryFraction is the share of a cgroup memory limit used as the
// Go soft memory limit when none is configured. Without a soft limit Go
// lets the heap grow to twice the live data (GOGC=100) whatever the
// container allows, so a node holding a large table is OOM-killed at a
// size it could have lived with by collecting more often; 90 % leaves
// room for what the limit does not count (thread stacks outside Go, page
// cache charged to the cgroup, the kernel's own accounting). Outside a
// cgroup limit no default is set: the machine's physical memory is shared
// with other processes, and a fraction of it says nothing about what this
// node may use.
const defaultMemoryFraction = 0.9

// memLimitSource says where the effective memory limit came from.
type memLimitSource string

const (
	memLimitNone      memLimitSource = "none"
	memLimitGOMEM     memLimitSource = "GOMEMLIMIT"
	memLimitFlag      memLimitSource = "flag"
	memLimitCgroupDef memLimitSource = "cgroup"
)

// MemLimitPlan is what MemLimitPlan.Apply will do.
type MemLimitPlan struct {
	bytes   int64 // 0: leave the runtime's limit alone
	source  memLimitSource
	flagSet bool // --memory-limit was given (for the GOMEMLIMIT warning)
}

// planMemoryLimit decides the memory limit from the flag value (may be
// empty), the GOMEMLIMIT environment variable (the Go runtime already
// applied it; it wins so operators keep the standard knob) and the
// cgroup limit (0: none). It returns an error for a malformed flag even
// when GOMEMLIMIT wins, so a typo never goes unnoticed.
func planMemoryLimit(flagVal, gomemlimit string, cgroupLimit, physical int64) (MemLimitPlan, error) {
	var fromFlag int64
	set := false
	if s := strings.TrimSpace(flagVal); s != "" {
		v, err := parseMemoryLimit(s, cgroupLimit, physical)
		if err != nil {
			return MemLimitPlan{}, err
		}
		fromFlag, set = v, true
	}
	switch {
	case gomemlimit != "":
		return MemLimitPlan{source: memLimitGOMEM}, nil
	case set && fromFlag == 0:
		return MemLimitPlan{source: memLimitNone}, nil
	case set:
		return MemLimitPlan{bytes: fromFlag, source: memLimitFlag}, nil
	case cgroupLimit > 0:
		return MemLimitPlan{bytes: int64(float64(cgroupLimit) * defaultMemoryFraction), source: memLimitCgroupDef}, nil
	}
	return MemLimitPlan{source: memLimitNone}, nil
}

// parseMemoryLimit reads a memory limit: bytes with an optional unit
// (B, KiB, MiB, GiB, TiB as in GOMEMLIMIT; KB, MB, GB, TB decimal; K, M,
// G, T binary), a percentage of the cgroup limit or, without one, of the
// physical memory ("75%"), or "off"/"0" for none.
func parseMemoryLimit(s string, cgroupLimit, physical int64) (int64, error) {
	s = strings.TrimSpace(s)
	if s == "off" || s == "none" {
		return 0, nil
	}
	if p, ok := strings.CutSuffix(s, "%"); ok {
		f, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil || f <= 0 || f > 100 || math.IsNaN(f) {
			return 0, fmt.Errorf("memory limit %q: want a percentage in (0, 100]", s)
		}
		base := cgroupLimit
		if base <= 0 {
			base = physical
		}
		if base <= 0 {
			return 0, fmt.Errorf("memory limit %q: neither a cgroup limit nor the physical memory size is known", s)
		}
		return int64(float64(base) * f / 100), nil
	}
	v, err := ParseBytes(s)
	if err != nil {
		return 0, fmt.Errorf("memory limit %q: %w", s, err)
	}
	if v != 0 && v < minMemoryLimit {
		return 0, fmt.Errorf("memory limit %q: below the minimum of %d MiB", s, minMemoryLimit>>20)
	}
	return v, nil
}

// minMemoryLimit refuses limits a node cannot start under (the runtime
// would collect continuously): almost certainly a missing unit.
const minMemoryLimit = 16 << 20

// MemoryLimit plans the process's memory limit from the flag, GOMEMLIMIT
// and the cgroup, without applying it (so a bad value changes nothing).
func MemoryLimit(flagVal string) (MemLimitPlan, error) {
	p, err := planMemoryLimit(flagVal, os.Getenv("GOMEMLIMIT"), cgroupMemoryLimit("/"), physicalMemory())
	p.flagSet = strings.TrimSpace(flagVal) != ""
	return p, err
}

// Apply sets the planned limit and logs the outcome.
func (p MemLimitPlan) Apply(log hclog.Logger) {
	switch p.source {
	case memLimitGOMEM:
		if p.flagSet {
			log.Warn("GOMEMLIMIT is set and wins over --memory-limit", "GOMEMLIMIT", os.Getenv("GOMEMLIMIT"))
		}
		log.Info("memory limit", "bytes", debug.SetMemoryLimit(-1), "source", p.source)
	case memLimitNone:
		log.Info("memory limit", "bytes", "none", "source", p.source)
	default:
		debug.SetMemoryLimit(p.bytes)
		log.Info("memory limit", "bytes", p.bytes, "source", p.source)
	}
}

// cgroupMemoryLimit returns the smallest memory limit of this process's
// cgroup and its ancestors (v2 memory.max, v1 memory.limit_in_bytes),
// 0 when there is none or it cannot be read. root is the file system
// root ("/"; tests pass a fake tree).
func cgroupMemoryLimit(root string) int64 {
	f, err := os.Open(filepath.Join(root, "proc/self/cgroup"))
	if err != nil {
		return 0
	}
	defer f.Close()
	var best int64
	consider := func(dir, rel, file string) {
		// Walk from the process's cgroup up to the mount's root: an
		// ancestor's limit binds as well.
		rel = filepath.Clean("/" + rel)
		for {
			if v := readLimit(filepath.Join(root, dir, rel, file)); v > 0 && (best == 0 || v < best) {
				best = v
			}
			if rel == "/" {
				return
			}
			rel = filepath.Dir(rel)
		}
	}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// hierarchy-id:controllers:path
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case parts[0] == "0" && parts[1] == "":
			consider("sys/fs/cgroup", parts[2], "memory.max")
		case hasController(parts[1], "memory"):
			consider("sys/fs/cgroup/memory", parts[2], "memory.limit_in_bytes")
		}
	}
	return best
}

func hasController(list, name string) bool {
	for _, c := range strings.Split(list, ",") {
		if c == name {
			return true
		}
	}
	return false
}

// readLimit reads one cgroup limit file; "max", v1's "unlimited" (a
// value near MaxInt64) and unreadable files are 0.
func readLimit(path string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || v <= 0 || v >= 1<<62 {
		return 0
	}
	return v
}

// physicalMemory returns MemTotal from /proc/meminfo, 0 if unknown.
func physicalMemory() int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			f := strings.Fields(rest)
			if len(f) == 2 && f[1] == "kB" {
				if kb, err := strconv.ParseInt(f[0], 10, 64); err == nil {
					return kb << 10
				}
			}
		}
	}
	return 0
}
