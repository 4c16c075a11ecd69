package auth

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func sha(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]) }

func TestParseAndAllowed(t *testing.T) {
	file := `# users
user admin on >adminpw ~* +@all
user app on >apppw #` + sha("second") + ` ~app:* +@read +@write
user reader on >r ~app:* ~shared:lock +@read
user off off >x ~* +@all
user nopw on nopass ~* +@read -@read +@write
user chans on >c ~app:* &news:* +@read

`
	us, err := Parse(strings.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(us.Names(), ","); got != "admin,app,reader,off,nopw,chans" {
		t.Fatalf("names %s", got)
	}
	auths := []struct {
		user, pass string
		ok         bool
	}{
		{"admin", "adminpw", true},
		{"admin", "adminpW", false},
		{"app", "apppw", true},
		{"app", "second", true},
		{"app", "", false},
		{"nobody", "adminpw", false},
		{"off", "x", false},
		{"nopw", "anything", true},
		{"default", "", false},
	}
	for _, a := range auths {
		_, err := us.Authenticate(a.user, a.pass)
		if (err == nil) != a.ok {
			t.Errorf("Authenticate(%s, %s) = %v, want ok=%v", a.user, a.pass, err, a.ok)
		}
		if err != nil && !errors.Is(err, ErrWrongPass) {
			t.Errorf("error %v is not ErrWrongPass", err)
		}
	}
	allowed := []struct {
		user string
		cat  Category
		keys []string
		ok   bool
	}{
		{"admin", Admin, []string{"x"}, true},
		{"app", Write, []string{"app:1", "app:2"}, true},
		{"app", Write, []string{"app:1", "other"}, false},
		{"app", Read, nil, true},
		{"app", Admin, nil, false},
		{"reader", Read, []string{"shared:lock"}, true},
		{"reader", Read, []string{"shared:lock2"}, false},
		{"reader", Write, []string{"app:1"}, false},
		{"off", Read, nil, false},
		{"nopw", Read, nil, false},
		{"nopw", Write, nil, true},
	}
	for _, a := range allowed {
		if got := us.Lookup(a.user).Allowed(a.cat, a.keys...); got != a.ok {
			t.Errorf("%s.Allowed(%v, %q) = %v, want %v", a.user, a.cat, a.keys, got, a.ok)
		}
	}
	chans := []struct {
		user, ch string
		pattern  bool
		ok       bool
	}{
		{"app", "app:events", false, true},
		{"app", "news:1", false, false},
		{"chans", "news:1", false, true},
		{"chans", "app:events", false, false}, // own & rules replace the key patterns
		{"chans", "news:*", true, true},
		{"chans", "news:1*", true, false}, // not literally one of its patterns
		{"app", "app:x", true, true},      // no glob: a channel name
		{"admin", "*", true, true},
	}
	for _, c := range chans {
		u := us.Lookup(c.user)
		got := u.Channel(c.ch)
		if c.pattern {
			got = u.ChannelPattern(c.ch)
		}
		if got != c.ok {
			t.Errorf("%s channel %q (pattern %v) = %v, want %v", c.user, c.ch, c.pattern, got, c.ok)
		}
	}
	if us.Anonymous() != nil {
		t.Error("no default user, yet an anonymous user")
	}
}

func TestParseErrors(t *testing.T) {
	cases := []struct{ name, file, want string }{
		{"not a user line", "acl x", "line 1"},
		{"unknown rule", "user a on +get", `unknown rule "+get"`},
		{"unknown category", "user a on +@dangerous", "unknown rule"},
		{"bad hash", "\nuser a on #abc", "line 2: a #hash must be"},
		{"duplicate", "user a on\nuser a off", "duplicate user"},
		{"remove password", "user a on <secretpw", "not supported"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse(strings.NewReader(c.file))
			if err == nil || !errors.Is(err, ErrSyntax) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v, want ErrSyntax containing %q", err, c.want)
			}
			if strings.Contains(err.Error(), "secretpw") {
				t.Fatalf("error shows the password: %v", err)
			}
		})
	}
	_, err := Parse(strings.NewReader(strings.Repeat("#", MaxFileBytes+1)))
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("big file: %v", err)
	}
}

func TestAnonymousDefault(t *testing.T) {
	us, err := Parse(strings.NewReader("user default on nopass ~pub:* +@read"))
	if err != nil {
		t.Fatal(err)
	}
	u := us.Anonymous()
	if u == nil || !u.Allowed(Read, "pub:x") || u.Allowed(Read, "x") {
		t.Fatalf("anonymous %+v", u)
	}
}

func TestStoreReload(t *testing.T) {
	path := filepath.Join(t.TempDir(), "users.acl")
	write := func(s string) {
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("user a on >one ~* +@all")
	s, err := NewStore(path, NewAudit(nil))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Users().Authenticate("a", "one"); err != nil {
		t.Fatal(err)
	}
	write("user a on >two ~* +@all")
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Users().Authenticate("a", "one"); err == nil {
		t.Fatal("old password still works after reload")
	}
	write("user a on >three +@bogus")
	if err := s.Reload(); err == nil {
		t.Fatal("bad file reloaded")
	}
	if _, err := s.Users().Authenticate("a", "two"); err != nil {
		t.Fatalf("a failed reload changed the users: %v", err)
	}
	var nilStore *Store
	if nilStore.Enabled() || nilStore.Users() != nil || nilStore.Reload() != nil {
		t.Fatal("nil store")
	}
}

func TestMatch(t *testing.T) {
	cases := []struct {
		p, s string
		ok   bool
	}{
		{"app:*", "app:x", true}, {"app:*", "ap", false}, {"a?c", "abc", true},
		{"[a-c]x", "bx", true}, {"[^a]x", "ax", false}, {`a\*`, "a*", true}, {`a\*`, "ab", false},
		{"*", "", true}, {"a*b*c", "aXbYc", true}, {"a*b*c", "aXbY", false},
	}
	for _, c := range cases {
		if Match(c.p, c.s) != c.ok {
			t.Errorf("Match(%q, %q) != %v", c.p, c.s, c.ok)
		}
	}
}
