package fsm

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Number parsing and formatting exactly as Redis does it, because clients
// (and scripts) see the difference: Redis refuses "+1", "01" and " 1" as
// integers, and formats scores with %.17g.

// parseInt is Redis' string2ll: an optional '-', then digits without a
// leading zero (except "0" itself), within int64.
func parseInt(b []byte) (int64, bool) {
	n := len(b)
	if n == 0 || n > 20 {
		return 0, false
	}
	if n == 1 && b[0] == '0' {
		return 0, true
	}
	i, neg := 0, false
	if b[0] == '-' {
		neg = true
		i = 1
		if n == 1 {
			return 0, false
		}
	}
	if b[i] < '1' || b[i] > '9' {
		return 0, false
	}
	var v uint64
	for ; i < n; i++ {
		c := b[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		if v > (math.MaxUint64-9)/10 {
			return 0, false
		}
		v = v*10 + uint64(c-'0')
	}
	if neg {
		if v > 1<<63 {
			return 0, false
		}
		return -int64(v), true
	}
	if v > math.MaxInt64 {
		return 0, false
	}
	return int64(v), true
}

// parseFloat is Redis' getDoubleFromObject for scores: strtod over the
// whole string, no surrounding space, NaN refused, "inf" accepted.
func parseFloat(b []byte) (float64, bool) {
	s := string(b)
	if s == "" || s[0] == ' ' || s[len(s)-1] == ' ' || strings.ContainsAny(s, "_\t\n\r\v\f") {
		return 0, false
	}
	switch strings.ToLower(s) {
	case "inf", "+inf", "infinity", "+infinity":
		return math.Inf(1), true
	case "-inf", "-infinity":
		return math.Inf(-1), true
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		// strtod saturates instead of failing on overflow.
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			return f, true
		}
		return 0, false
	}
	if math.IsNaN(f) {
		return 0, false
	}
	return f, true
}

// fmtScore formats a score as Redis 7.0 does (%.17g, "inf", "-inf").
func fmtScore(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	return fmt.Sprintf("%.17g", f)
}

// addOverflows reports whether a+b overflows int64.
func addOverflows(a, b int64) bool {
	return (b > 0 && a > math.MaxInt64-b) || (b < 0 && a < math.MinInt64-b)
}
