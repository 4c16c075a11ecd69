package api

import (
	"strings"
)

// internalPrefixes are the package names that sentinel errors carry for
// logs ("fsm: not held"); a client is not told which package refused.
var internalPrefixes = []string{"locknode", "fsm", "cluster", "httpapi", "redisbridge", "client", "api", "auth", "transport", "raft", "tlsutil"}

// ClientText renders err for a client — an HTTP error body's message,
// the text after a RESP error's prefix, a command line's error line:
// err's text without the package names its sentinels carry, and a cause
// that two layers both state said once ("not held: not held: \"k\""
// becomes "not held: \"k\"").
func ClientText(err error) string {
	if err == nil {
		return ""
	}
	return CleanText(err.Error())
}

// CleanText is ClientText of an error's text.
func CleanText(s string) string {
	parts := strings.Split(s, ": ")
	out := parts[:0]
	for _, p := range parts {
		if isInternalPrefix(p) {
			continue
		}
		if len(out) > 0 && out[len(out)-1] == p {
			continue
		}
		out = append(out, p)
	}
	return strings.Join(out, ": ")
}

func isInternalPrefix(p string) bool {
	for _, q := range internalPrefixes {
		if p == q {
			return true
		}
	}
	return false
}
