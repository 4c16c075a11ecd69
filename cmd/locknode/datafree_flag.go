package main

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/locknode/locknode/cluster"
)

// dataFreeWarnUsage documents --data-free-warn.
const dataFreeWarnUsage = "log a WARN (once a minute) while the data directory's filesystem has less free space than this: " +
	"a percentage of the filesystem (5%) or bytes with a unit (512MiB, 2GiB), or off; default 5%. " +
	"A full disk stops the node's log appends and snapshots; locknode_data_free_bytes is exported either way"

// parseDataFreeWarn reads --data-free-warn into cluster.Config.DataFreeWarn:
// "" is the default.
func parseDataFreeWarn(s string) (cluster.DiskSpace, error) {
	s = strings.TrimSpace(s)
	switch s {
	case "":
		return cluster.DefaultConfig().DataFreeWarn, nil
	case "off", "none", "0":
		return cluster.DiskSpace{Off: true}, nil
	}
	if p, ok := strings.CutSuffix(s, "%"); ok {
		f, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil || f <= 0 || f >= 100 || math.IsNaN(f) {
			return cluster.DiskSpace{}, fmt.Errorf("%q: want a percentage in (0, 100)", s)
		}
		return cluster.DiskSpace{Percent: f}, nil
	}
	v, err := parseBytes(s)
	if err != nil {
		return cluster.DiskSpace{}, fmt.Errorf("%q: %w", s, err)
	}
	if v == 0 {
		return cluster.DiskSpace{Off: true}, nil
	}
	return cluster.DiskSpace{Bytes: uint64(v)}, nil
}
