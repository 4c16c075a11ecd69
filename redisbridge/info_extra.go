package redisbridge

import "strings"

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
