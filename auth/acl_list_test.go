package auth

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
)

func TestUserRuleRoundTrips(t *testing.T) {
	sum := sha256.Sum256([]byte("s3cret"))
	hash := hex.EncodeToString(sum[:])
	for _, tc := range []struct {
		name, line, want string
	}{
		{"admin", "user admin on >s3cret ~* +@all",
			"user admin on #" + hash + " ~* +@all"},
		{"reader-namespace", "user app on #" + hash + " ~app:* ~shared +@read",
			"user app on #" + hash + " ~app:* ~shared -@all +@read"},
		{"nopass-default", "user default on nopass allkeys allcommands",
			"user default on nopass ~* +@all"},
		{"disabled-no-keys", "user gone off >x +@read +@write",
			"user gone off #" + hex.EncodeToString(func() []byte { s := sha256.Sum256([]byte("x")); return s[:] }()) + " resetkeys -@all +@read +@write"},
		{"channels", "user pub on nopass ~k &news:* +@write",
			"user pub on nopass ~k &news:* -@all +@write"},
		{"no-channels", "user q on nopass ~k resetchannels +@read",
			"user q on nopass ~k resetchannels -@all +@read"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			us, err := Parse(strings.NewReader(tc.line))
			if err != nil {
				t.Fatal(err)
			}
			u := us.Lookup(us.Names()[0])
			got := u.Rule()
			if got != tc.want {
				t.Fatalf("Rule() = %q, want %q", got, tc.want)
			}
			if strings.Contains(got, "s3cret") || strings.Contains(got, ">") {
				t.Fatalf("Rule() shows a password: %q", got)
			}
			// Read back, the rule renders the same: it is a users-file line.
			back, err := Parse(strings.NewReader(got))
			if err != nil {
				t.Fatalf("Rule() does not parse: %v", err)
			}
			if again := back.Lookup(u.Name).Rule(); again != got {
				t.Fatalf("round trip: %q, then %q", got, again)
			}
		})
	}
}
