package main

import (
	"fmt"
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
	v, err := parseBytes(s)
	if err != nil {
		return 0, fmt.Errorf("max memory %q: %w", s, err)
	}
	if v == 0 {
		return fsm.NoMaxMemory, nil
	}
	return v, nil
}
