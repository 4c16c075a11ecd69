package auth

import (
	"encoding/hex"
	"strings"
)

// Rule renders the user in users-file syntax, as Redis' ACL LIST does:
// "user NAME on|off", "nopass" or one "#sha256" per password (never a
// password), key patterns, channel rules, categories. Parse reads the
// line back to an equal user. A user whose line has no channel rule gets
// none: its channels follow its key patterns (a locknode rule; Redis
// would print resetchannels).
func (u *User) Rule() string {
	var b strings.Builder
	b.WriteString("user ")
	b.WriteString(u.Name)
	if u.Enabled {
		b.WriteString(" on")
	} else {
		b.WriteString(" off")
	}
	if u.nopass {
		b.WriteString(" nopass")
	}
	for _, h := range u.hashes {
		b.WriteString(" #")
		b.WriteString(hex.EncodeToString(h[:]))
	}
	switch {
	case u.allKeys:
		b.WriteString(" ~*")
	case len(u.keys) == 0:
		b.WriteString(" resetkeys")
	}
	if !u.allKeys {
		for _, k := range u.keys {
			b.WriteString(" ~")
			b.WriteString(k)
		}
	}
	if u.chanSet {
		switch {
		case u.allChans:
			b.WriteString(" &*")
		case len(u.channels) == 0:
			b.WriteString(" resetchannels")
		default:
			for _, ch := range u.channels {
				b.WriteString(" &")
				b.WriteString(ch)
			}
		}
	}
	if u.Categories == All {
		b.WriteString(" +@all")
	} else {
		b.WriteString(" -@all")
		for _, c := range []Category{Read, Write, Admin} {
			if u.Categories&c != 0 {
				b.WriteString(" +@" + c.String())
			}
		}
	}
	return b.String()
}
