package main

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/locknode/locknode/fsm"
)

// maxMemoryUsage documents --max-memory.
var maxMemoryUsage = fmt.Sprintf("memory limit of the key space (its accounted size: keys, values, holds, waiters, sessions, request ids): "+
	"bytes with a unit (512MiB, 2GiB, 800MB), or 0/off for none; past it, writes that grow the key space are refused "+
	"(RESP -OOM, HTTP 507) while releases, deletes and expiries work. Must be the same on every node (default %dMiB)",
	fsm.DefaultConfig().MaxMemory>>20)

// parseMaxMemory reads --max-memory into fsm.Config.MaxMemory: "" is the
// default (0, which fsm.New fills), "0"/"off"/"none" is no limit. There is
// no percentage form: every node must refuse the same commands, so the
// limit cannot depend on a machine's memory.
func parseMaxMemory(s string) (int64, error) {
	s = strings.TrimSpace(s)
	switch s {
	case "":
		return 0, nil
	case "0", "off", "none":
		return fsm.NoMaxMemory, nil
	}
	i := len(s)
	for i > 0 && (s[i-1] < '0' || s[i-1] > '9') {
		i--
	}
	num, unit := s[:i], strings.TrimSpace(s[i:])
	mult, ok := byteUnits[strings.ToLower(unit)]
	if !ok {
		return 0, fmt.Errorf("max memory %q: unknown unit %q (B, KiB, MiB, GiB, TiB, KB, MB, GB, TB)", s, unit)
	}
	v, err := strconv.ParseInt(strings.TrimSpace(num), 10, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("max memory %q: want a non-negative whole number with a unit, e.g. 512MiB, or off", s)
	}
	if v > math.MaxInt64/mult {
		return 0, fmt.Errorf("max memory %q: too large", s)
	}
	if v == 0 {
		return fsm.NoMaxMemory, nil
	}
	return v * mult, nil
}
