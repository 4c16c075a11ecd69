package auth

// Match is Redis' stringmatch: * ? [abc] [^a] [a-z] and \ escapes.
// Iterative with one backtrack point per '*', so linear-ish, never
// exponential on hostile patterns. Key patterns, channel patterns and
// PSUBSCRIBE all use it.
func Match(pattern, s string) bool {
	p, i := 0, 0
	starP, starI := -1, 0
	for i < len(s) {
		if p < len(pattern) {
			switch pattern[p] {
			case '*':
				for p < len(pattern) && pattern[p] == '*' {
					p++
				}
				if p == len(pattern) {
					return true
				}
				starP, starI = p, i
				continue
			case '?':
				p++
				i++
				continue
			case '[':
				if ok, next := matchClass(pattern, p, s[i]); ok {
					p, i = next, i+1
					continue
				}
			case '\\':
				if p+1 < len(pattern) {
					if pattern[p+1] == s[i] {
						p, i = p+2, i+1
						continue
					}
				} else if s[i] == '\\' {
					p, i = p+1, i+1
					continue
				}
			default:
				if pattern[p] == s[i] {
					p++
					i++
					continue
				}
			}
		}
		if starP < 0 {
			return false
		}
		starI++
		p, i = starP, starI
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

// matchClass matches ch against the [...] class starting at pattern[p];
// next is the index after the class.
func matchClass(pattern string, p int, ch byte) (ok bool, next int) {
	p++ // '['
	not := false
	if p < len(pattern) && pattern[p] == '^' {
		not = true
		p++
	}
	match := false
	for p < len(pattern) && pattern[p] != ']' {
		switch {
		case pattern[p] == '\\' && p+1 < len(pattern):
			p++
			if pattern[p] == ch {
				match = true
			}
		case p+2 < len(pattern) && pattern[p+1] == '-' && pattern[p+2] != ']':
			lo, hi := pattern[p], pattern[p+2]
			if lo > hi {
				lo, hi = hi, lo
			}
			if ch >= lo && ch <= hi {
				match = true
			}
			p += 2
		default:
			if pattern[p] == ch {
				match = true
			}
		}
		p++
	}
	// p is at ']' or past the end (Redis treats an unclosed class as
	// ending at the pattern's end).
	if p < len(pattern) {
		p++
	}
	if not {
		match = !match
	}
	return match, p
}
