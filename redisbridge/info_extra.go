package redisbridge

import (
	"strconv"
	"strings"
)

// infoSection is one "# Name" block of INFO text.
type infoSection struct {
	name  string
	lines []string
}

// parseInfoSections splits Config.ExtraInfo text into sections. Lines
// before the first header and blank lines are dropped.
func parseInfoSections(text string) []infoSection {
	var out []infoSection
	for _, l := range strings.Split(text, "\n") {
		l = strings.TrimRight(l, "\r")
		switch {
		case strings.HasPrefix(l, "# "):
			out = append(out, infoSection{name: strings.TrimSpace(l[2:])})
		case l == "" || len(out) == 0:
		default:
			out[len(out)-1].lines = append(out[len(out)-1].lines, l)
		}
	}
	return out
}

// memoryInfo is INFO's Memory section: the key space's accounted size as
// used_memory and its limit (--max-memory, 0 = none) as maxmemory, with
// the noeviction policy that is what the limit does, so that clients
// that check maxmemory_policy before queueing work accept the node.
func memoryInfo(used, limit int64) []string {
	return []string{
		"used_memory:" + strconv.FormatInt(used, 10),
		"used_memory_human:" + bytesToHuman(used),
		"maxmemory:" + strconv.FormatInt(limit, 10),
		"maxmemory_human:" + bytesToHuman(limit),
		"maxmemory_policy:noeviction",
	}
}

// bytesToHuman formats n as Redis' bytesToHuman does: 1000B, 917.34K,
// 1.00M, 2.50G.
func bytesToHuman(n int64) string {
	units := []string{"K", "M", "G", "T", "P"}
	if n < 1024 {
		return strconv.FormatInt(n, 10) + "B"
	}
	f := float64(n) / 1024
	i := 0
	for f >= 1024 && i < len(units)-1 {
		f /= 1024
		i++
	}
	return strconv.FormatFloat(f, 'f', 2, 64) + units[i]
}
