package main

import (
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/locknode/locknode/api"
)

// commandMeta is the metadata `locknode lock` adds to its hold besides
// the client's host and pid: the command line it runs, cut to fit the
// limits (with "..." at the cut) rather than refused — it is ours to
// shorten, not the user's input.
func commandMeta(cmdArgs []string, l api.Limits) map[string]string {
	l = l.WithDefaults()
	line := commandLine(cmdArgs)
	room := l.MaxMetaValueBytes
	used := len(api.MetaCmd)
	for k, v := range api.ProcessMeta() {
		used += len(k) + len(v)
	}
	room = min(room, l.MaxMetaBytes-used)
	if room <= 0 || l.MaxMetaEntries < 3 {
		return nil
	}
	return map[string]string{api.MetaCmd: truncateUTF8(line, room)}
}

// commandLine joins args as a shell would read them back: arguments
// with spaces or quotes are quoted. Invalid UTF-8 is replaced, since
// metadata travels as JSON text.
func commandLine(args []string) string {
	parts := make([]string, len(args))
	for i, a := range args {
		a = strings.ToValidUTF8(a, "\uFFFD")
		if a == "" || strings.ContainsAny(a, " \t\n\"'\\$`") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		parts[i] = a
	}
	return strings.Join(parts, " ")
}

// truncateUTF8 cuts s to at most n bytes at a character boundary, ending
// in "..." when it cut.
func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const more = "..."
	if n <= len(more) {
		return more[:max(n, 0)]
	}
	cut := n - len(more)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + more
}

// metaText shows metadata for people: name=value pairs in name order,
// values quoted when they hold spaces.
func metaText(m map[string]string) string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	slices.Sort(names)
	parts := make([]string, 0, len(names))
	for _, k := range names {
		v := m[k]
		if v == "" || strings.ContainsAny(v, " \t\n\"") {
			v = fmt.Sprintf("%q", v)
		}
		parts = append(parts, k+"="+v)
	}
	return strings.Join(parts, " ")
}

// since says how long ago the cluster time ms was, at now; "" when ms
// is 0 (unknown).
func since(ms int64, now time.Time) string {
	if ms <= 0 {
		return ""
	}
	d := now.Sub(time.UnixMilli(ms)).Round(time.Second)
	if d < 0 {
		// Cluster time is within about a second of wall time.
		d = 0
	}
	return d.String()
}
