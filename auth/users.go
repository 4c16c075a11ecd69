package auth

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

var (
	// ErrWrongPass: unknown user, wrong password or disabled user (one
	// error for all three, as Redis, so a caller cannot probe names).
	ErrWrongPass = errors.New("auth: invalid username-password pair or user is disabled")
	// ErrSyntax: the users file does not parse; the error names the line.
	ErrSyntax = errors.New("auth: users file")
	// ErrTooLarge: the users file is over MaxFileBytes.
	ErrTooLarge = errors.New("auth: users file too large")
)

// Category is a set of permission categories.
type Category uint8

// The categories. Every command and route needs exactly one of them (or
// none, for connection commands such as PING and AUTH).
const (
	// Read: GET, PTTL, LOCK.INFO, lists and inspection, status, observe,
	// SUBSCRIBE.
	Read Category = 1 << iota
	// Write: acquire/try/release/extend of one's own holds, SET NX, DEL,
	// scripts, sessions, elections, fence checks, PUBLISH.
	Write
	// Admin: forced release, membership, snapshots, SCRIPT FLUSH.
	Admin
	// All is every category (+@all).
	All = Read | Write | Admin
)

// String is the category's name in a users file ("read", "write", ...).
func (c Category) String() string {
	switch c {
	case Read:
		return "read"
	case Write:
		return "write"
	case Admin:
		return "admin"
	case All:
		return "all"
	case 0:
		return "none"
	}
	var names []string
	for _, x := range []Category{Read, Write, Admin} {
		if c&x != 0 {
			names = append(names, x.String())
		}
	}
	return strings.Join(names, "|")
}

var categoryNames = map[string]Category{"read": Read, "write": Write, "admin": Admin, "all": All}

// DefaultUser is the user of "AUTH password" and of a connection that has
// not authenticated when that user is "on nopass".
const DefaultUser = "default"

// MaxFileBytes bounds a users file: it is read whole, at start and on
// every reload.
const MaxFileBytes = 4 << 20

// User is one user of a users file. It never changes once parsed; a
// reload builds new Users.
type User struct {
	Name    string
	Enabled bool
	// Categories the user may run.
	Categories Category
	nopass     bool
	hashes     [][sha256.Size]byte
	keys       []string // key patterns; allKeys when one is "*"
	allKeys    bool
	channels   []string // &patterns; nil with chanSet false = use keys
	allChans   bool
	chanSet    bool // the line has a channel rule: channels are its own
}

// Can reports whether the user has every category in c.
func (u *User) Can(c Category) bool { return u != nil && u.Enabled && u.Categories&c == c }

// Key reports whether key is in the user's key patterns.
func (u *User) Key(key string) bool {
	if u.allKeys {
		return true
	}
	for _, p := range u.keys {
		if Match(p, key) {
			return true
		}
	}
	return false
}

// AllKeys reports whether the user may use every key (~* or allkeys).
func (u *User) AllKeys() bool { return u.allKeys }

// Allowed reports whether the user may run something of category c on
// every one of keys.
func (u *User) Allowed(c Category, keys ...string) bool {
	if !u.Can(c) {
		return false
	}
	for _, k := range keys {
		if !u.Key(k) {
			return false
		}
	}
	return true
}

// Channel reports whether the user may publish to or subscribe to the
// channel. A user line with channel rules (&pattern, allchannels) uses
// them, as Redis; one without uses its key patterns, so a namespace
// ~app:* covers the channels app:* too.
func (u *User) Channel(ch string) bool {
	if !u.chanSet {
		return u.Key(ch)
	}
	if u.allChans {
		return true
	}
	for _, p := range u.channels {
		if Match(p, ch) {
			return true
		}
	}
	return false
}

// ChannelPattern reports whether the user may PSUBSCRIBE to pattern:
// every channel, one of its patterns literally (Redis' rule: a pattern
// cannot be proven to be inside another), or a pattern without glob
// characters that names an allowed channel.
func (u *User) ChannelPattern(pattern string) bool {
	all, list := u.allKeys, u.keys
	if u.chanSet {
		all, list = u.allChans, u.channels
	}
	if all || slices.Contains(list, pattern) {
		return true
	}
	return !strings.ContainsAny(pattern, `*?[\`) && u.Channel(pattern)
}

// checkPassword compares in constant time against every hash the user
// has, so the time taken says nothing about which or how many matched.
func (u *User) checkPassword(pass string) bool {
	if u.nopass {
		return true
	}
	sum := sha256.Sum256([]byte(pass))
	ok := 0
	for i := range u.hashes {
		ok |= subtle.ConstantTimeCompare(sum[:], u.hashes[i][:])
	}
	return ok == 1
}

// Users is one parsed users file.
type Users struct {
	byName map[string]*User
	names  []string // in file order
}

// Names lists the users in file order.
func (us *Users) Names() []string { return slices.Clone(us.names) }

// Lookup returns the user called name, or nil. A disabled user is
// returned too (User.Can is false for it).
func (us *Users) Lookup(name string) *User {
	if us == nil {
		return nil
	}
	return us.byName[name]
}

// Authenticate returns the user name/pass identifies, or ErrWrongPass.
// An unknown name still costs one hash, so timing does not tell names
// apart.
func (us *Users) Authenticate(name, pass string) (*User, error) {
	u := us.Lookup(name)
	if u == nil {
		sha256.Sum256([]byte(pass))
		return nil, ErrWrongPass
	}
	if !u.checkPassword(pass) || !u.Enabled {
		return nil, ErrWrongPass
	}
	return u, nil
}

// Anonymous returns the user of a client that has not authenticated: the
// default user when it is "on nopass", else nil.
func (us *Users) Anonymous() *User {
	u := us.Lookup(DefaultUser)
	if u != nil && u.Enabled && u.nopass {
		return u
	}
	return nil
}

// ParseFile reads and parses a users file.
func ParseFile(path string) (*Users, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("auth: %w", err)
	}
	defer f.Close()
	return Parse(f)
}

// Parse parses a users file: one "user NAME rule..." line per user, in
// the subset of Redis' ACL file syntax described in doc.go. Empty lines
// and lines starting with '#' are skipped. A user named twice, an unknown
// rule or a malformed hash is an error naming the line; nothing of a
// file with an error is used.
func Parse(r io.Reader) (*Users, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("auth: reading users file: %w", err)
	}
	if len(data) > MaxFileBytes {
		return nil, fmt.Errorf("%w: over %d bytes", ErrTooLarge, MaxFileBytes)
	}
	us := &Users{byName: map[string]*User{}}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), MaxFileBytes)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		u, err := parseLine(line)
		if err != nil {
			return nil, fmt.Errorf("%w: line %d: %w", ErrSyntax, n, err)
		}
		if us.byName[u.Name] != nil {
			return nil, fmt.Errorf("%w: line %d: duplicate user %q", ErrSyntax, n, u.Name)
		}
		us.byName[u.Name] = u
		us.names = append(us.names, u.Name)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSyntax, err)
	}
	return us, nil
}

// parseLine parses "user NAME rule...". Error texts never include a
// password rule's text.
func parseLine(line string) (*User, error) {
	f := strings.Fields(line)
	if len(f) < 2 || f[0] != "user" {
		return nil, errors.New(`expected "user NAME rule..."`)
	}
	u := &User{Name: f[1]}
	for _, rule := range f[2:] {
		if err := u.apply(rule); err != nil {
			return nil, err
		}
	}
	return u, nil
}

func (u *User) apply(rule string) error {
	lower := strings.ToLower(rule)
	switch lower {
	case "on":
		u.Enabled = true
		return nil
	case "off":
		u.Enabled = false
		return nil
	case "nopass":
		u.nopass, u.hashes = true, nil
		return nil
	case "resetpass":
		u.nopass, u.hashes = false, nil
		return nil
	case "allkeys":
		u.allKeys = true
		return nil
	case "resetkeys":
		u.allKeys, u.keys = false, nil
		return nil
	case "allchannels":
		u.chanSet, u.allChans = true, true
		return nil
	case "resetchannels":
		u.chanSet, u.allChans, u.channels = true, false, nil
		return nil
	case "allcommands":
		u.Categories = All
		return nil
	case "nocommands":
		u.Categories = 0
		return nil
	}
	switch rule[0] {
	case '>':
		sum := sha256.Sum256([]byte(rule[1:]))
		u.addHash(sum)
		u.nopass = false
		return nil
	case '#':
		var sum [sha256.Size]byte
		if len(rule) != 1+2*sha256.Size {
			return errors.New("a #hash must be 64 hex characters (sha256)")
		}
		if _, err := hex.Decode(sum[:], []byte(lower[1:])); err != nil {
			return errors.New("a #hash must be 64 hex characters (sha256)")
		}
		u.addHash(sum)
		u.nopass = false
		return nil
	case '<', '!':
		// Never echo the rule: it holds a password or its hash.
		return errors.New("removing a password (<pass, !hash) is not supported; list the passwords to keep")
	case '~':
		if rule == "~*" {
			u.allKeys = true
		}
		u.keys = append(u.keys, rule[1:])
		return nil
	case '&':
		u.chanSet = true
		if rule == "&*" {
			u.allChans = true
		}
		u.channels = append(u.channels, rule[1:])
		return nil
	case '+', '-':
		c, ok := categoryNames[strings.TrimPrefix(lower[1:], "@")]
		if !ok || !strings.HasPrefix(lower[1:], "@") {
			return fmt.Errorf("unknown rule %q: categories are +@read, +@write, +@admin, +@all (and -@...)", rule)
		}
		if rule[0] == '+' {
			u.Categories |= c
		} else {
			u.Categories &^= c
		}
		return nil
	}
	return fmt.Errorf("unknown rule %q", rule)
}

func (u *User) addHash(sum [sha256.Size]byte) {
	for _, h := range u.hashes {
		if h == sum {
			return
		}
	}
	u.hashes = append(u.hashes, sum)
}

// RequirePass returns users holding one user, "default", with password
// and every permission: Redis' requirepass.
func RequirePass(password string) *Users {
	u := &User{Name: DefaultUser, Enabled: true, Categories: All, allKeys: true, keys: []string{"*"}}
	u.addHash(sha256.Sum256([]byte(password)))
	return &Users{byName: map[string]*User{DefaultUser: u}, names: []string{DefaultUser}}
}
