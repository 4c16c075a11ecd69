package rediscmd

import (
	"strconv"
	"strings"
)

// Spec describes one command. Its fields are read-only.
type Spec struct {
	// Name is the command's name in lower case, as Redis' error texts
	// spell it.
	Name string
	// Arity is Redis' convention: n means exactly n arguments, the name
	// included; -n at least n.
	Arity int
	// Flags are the command's flags (Write, ReadOnly, NoScript, ...).
	Flags Flag
	// Categories are the ACL categories Redis lists for the command
	// besides those its flags imply (Categories returns both).
	Categories Category
	// Perm is what a locknode user needs to run the command. A front end
	// may ask for more by subcommand (CONFIG SET is admin).
	Perm Perm
	// Keys are the command's key specifications, in Redis' order.
	Keys []KeySpec
	// Channels are the pub/sub channels (or patterns) the command names.
	Channels ChannelRange
	// Tips are Redis' command tips (COMMAND INFO's eighth field).
	Tips []string

	// Derived by init from Keys (Redis' populateCommandLegacyRangeSpec).
	first, last, step int
	movable           bool
}

// Flag is a set of command flags.
type Flag uint32

// Command flags. All but KeySpace and MayReplicate are Redis' flags of the
// same name, and COMMAND lists them.
const (
	Write Flag = 1 << iota
	ReadOnly
	DenyOOM
	Admin
	PubSub
	NoScript
	Blocking
	Loading
	Stale
	SkipMonitor
	SkipSlowlog
	Asking
	Fast
	NoAuth
	NoMandatoryKeys
	AllowBusy
	// MayReplicate marks a command that changes no key but is propagated
	// (PUBLISH): Redis hides the flag and refuses it in read-only scripts,
	// as it does a write.
	MayReplicate
	// KeySpace marks a command the key space executes (fsm.Table's Redis
	// command table): in a script, and for the RESP bridge when it has
	// no handler of its own for the name.
	KeySpace
)

// flagNames is the order in which Redis 7 lists flags. movablekeys is not
// a Flag (it follows from the key specifications, as in Redis): the zero
// row stands for it, in its place.
var flagNames = []struct {
	f    Flag
	name string
}{
	{Write, "write"}, {ReadOnly, "readonly"}, {DenyOOM, "denyoom"}, {Admin, "admin"},
	{PubSub, "pubsub"}, {NoScript, "noscript"}, {Blocking, "blocking"}, {Loading, "loading"},
	{Stale, "stale"}, {SkipMonitor, "skip_monitor"}, {SkipSlowlog, "skip_slowlog"},
	{Asking, "asking"}, {Fast, "fast"}, {NoAuth, "no_auth"}, {NoMandatoryKeys, "no_mandatory_keys"},
	{0, "movablekeys"}, {AllowBusy, "allow_busy"},
}

// Category is a set of Redis ACL categories.
type Category uint32

// ACL categories, in the order Redis lists them.
const (
	CatKeyspace Category = 1 << iota
	CatRead
	CatWrite
	CatSet
	CatSortedSet
	CatList
	CatHash
	CatString
	CatBitmap
	CatHyperLogLog
	CatGeo
	CatStream
	CatPubSub
	CatAdmin
	CatFast
	CatSlow
	CatBlocking
	CatDangerous
	CatConnection
	CatTransaction
	CatScripting
)

var categoryNames = []string{
	"@keyspace", "@read", "@write", "@set", "@sortedset", "@list", "@hash", "@string",
	"@bitmap", "@hyperloglog", "@geo", "@stream", "@pubsub", "@admin", "@fast", "@slow",
	"@blocking", "@dangerous", "@connection", "@transaction", "@scripting",
}

// Perm is the permission a locknode user needs for a command (the users
// file's read, write and admin categories).
type Perm uint8

const (
	// PermNone: any authenticated user (connection commands).
	PermNone Perm = iota
	PermRead
	PermWrite
	PermAdmin
)

// ChannelRange says which arguments are pub/sub channels: First to Last
// (negative: counted from the end, -1 the last argument). First 0: none.
type ChannelRange struct {
	First, Last int
	// Patterns: the channels are PSUBSCRIBE glob patterns.
	Patterns bool
}

// KeyFlag is a set of key specification flags.
type KeyFlag uint16

// Key specification flags, Redis' (and in Redis' order).
const (
	KeyRO KeyFlag = 1 << iota
	KeyRW
	KeyOW
	KeyRM
	KeyAccess
	KeyUpdate
	KeyInsert
	KeyDelete
	KeyNotKey
	KeyIncomplete
	KeyVariableFlags
)

var keyFlagNames = []string{"RO", "RW", "OW", "RM", "access", "update", "insert", "delete", "not_key", "incomplete", "variable_flags"}

// KeySpec is one Redis 7 key specification: where the search for keys
// begins (an index, or the argument after a keyword), then how the keys
// run from there (a range, or a count read from an argument).
type KeySpec struct {
	Notes string
	Flags KeyFlag

	// Begin search: Index > 0 begins at that argument; otherwise the
	// first argument after Keyword, searched from StartFrom (negative:
	// backwards from the end).
	Index     int
	Keyword   string
	StartFrom int

	// Find keys. A range (KeyNum false): keys up to LastKey relative to
	// the beginning (negative: from the end; with Limit > 0, -1 means the
	// first 1/Limit of what remains), every KeyStep. A key count
	// (KeyNum true): the argument KeyNumIdx after the beginning holds the
	// count; the keys start FirstKey after the beginning, every KeyStep.
	KeyNum    bool
	LastKey   int
	KeyStep   int
	Limit     int
	KeyNumIdx int
	FirstKey  int
}

// one is a key specification of the single key at argument 1.
func one(f KeyFlag) KeySpec { return KeySpec{Flags: f, Index: 1, KeyStep: 1} }

// rest is a key specification of every step-th argument from 1 to the end.
func rest(f KeyFlag, step int) KeySpec {
	return KeySpec{Flags: f, Index: 1, LastKey: -1, KeyStep: step}
}

// ArityOK reports whether a command of n arguments, the name included,
// has the command's arity.
func (s *Spec) ArityOK(n int) bool {
	if s.Arity >= 0 {
		return n == s.Arity
	}
	return n >= -s.Arity
}

// Writes reports whether the command changes the key space or is
// propagated (PUBLISH): what a read-only script or a read may not run.
func (s *Spec) Writes() bool { return s.Flags&(Write|MayReplicate) != 0 }

// Movable reports whether the command's keys depend on argument values,
// so KeyRange does not find them all (Redis' movablekeys flag).
func (s *Spec) Movable() bool { return s.movable }

// KeyRange returns the legacy key positions COMMAND lists: first key,
// last key (negative: from the end) and step; (0, 0, 0) without keys.
func (s *Spec) KeyRange() (first, last, step int) { return s.first, s.last, s.step }

// FlagNames returns the flags as COMMAND lists them.
func (s *Spec) FlagNames() []string {
	var out []string
	for _, f := range flagNames {
		if (f.f != 0 && s.Flags&f.f != 0) || (f.f == 0 && s.movable) {
			out = append(out, f.name)
		}
	}
	return out
}

// AllCategories is Categories with those the flags imply, as Redis
// derives them (setImplicitACLCategories).
func (s *Spec) AllCategories() Category {
	c := s.Categories
	if s.Flags&Write != 0 {
		c |= CatWrite
	}
	if s.Flags&ReadOnly != 0 && c&CatScripting == 0 {
		c |= CatRead
	}
	if s.Flags&Admin != 0 {
		c |= CatAdmin | CatDangerous
	}
	if s.Flags&PubSub != 0 {
		c |= CatPubSub
	}
	if s.Flags&Fast != 0 {
		c |= CatFast
	}
	if s.Flags&Blocking != 0 {
		c |= CatBlocking
	}
	if c&CatFast == 0 {
		c |= CatSlow
	}
	return c
}

// CategoryNames returns the ACL categories as COMMAND lists them.
func (s *Spec) CategoryNames() []string {
	var out []string
	c := s.AllCategories()
	for i, n := range categoryNames {
		if c&(1<<i) != 0 {
			out = append(out, n)
		}
	}
	return out
}

// Names returns the flag names of f as COMMAND INFO's key
// specifications list them.
func (f KeyFlag) Names() []string {
	var out []string
	for i, n := range keyFlagNames {
		if f&(1<<i) != 0 {
			out = append(out, n)
		}
	}
	return out
}

// KeyArgs returns the arguments of args that are keys, by the key
// specifications in order (a key two specifications name comes twice, as
// in Redis). A specification whose key count is not a number, is negative
// or runs past the arguments makes the command name no keys at all: the
// command itself refuses such arguments. Positions past the end are
// skipped. It never panics.
func (s *Spec) KeyArgs(args [][]byte) [][]byte {
	if len(s.Keys) == 1 {
		// The common case: one contiguous run needs no copy.
		first, last, step, ok := s.Keys[0].positions(args)
		if !ok {
			return nil
		}
		if step == 1 {
			if last >= len(args) {
				last = len(args) - 1
			}
			if first > last {
				return nil
			}
			return args[first : last+1 : last+1]
		}
	}
	var out [][]byte
	for i := range s.Keys {
		first, last, step, ok := s.Keys[i].positions(args)
		if !ok {
			return nil
		}
		for j := first; j <= last && j < len(args); j += step {
			out = append(out, args[j])
		}
	}
	return out
}

// positions returns the first and last argument index and the step of
// the keys k finds in args (first > last: none); ok is false when the
// specification cannot be applied to args (a bad key count).
func (k *KeySpec) positions(args [][]byte) (first, last, step int, ok bool) {
	argc := len(args)
	switch {
	case k.Index > 0:
		first = k.Index
	case k.Keyword != "":
		first = k.keyword(args)
		if first == 0 {
			return 1, 0, 1, true // keyword absent: no keys here
		}
	default:
		return 1, 0, 1, true
	}
	step = max(k.KeyStep, 1)
	if !k.KeyNum {
		switch {
		case k.LastKey >= 0:
			last = first + k.LastKey
		case k.Limit == 0:
			last = argc + k.LastKey
		default:
			last = first + ((argc-first)/k.Limit + k.LastKey)
		}
		return first, last, step, true
	}
	at := first + k.KeyNumIdx
	if at >= argc {
		return 0, 0, 0, false
	}
	n, err := strconv.ParseInt(string(args[at]), 10, 64)
	if err != nil || n < 0 {
		return 0, 0, 0, false
	}
	first += k.FirstKey
	if n > int64(argc-first+step-1)/int64(step) {
		return 0, 0, 0, false
	}
	return first, first + (int(n)-1)*step, step, true
}

// keyword returns the index after k.Keyword's occurrence in args, or 0.
func (k *KeySpec) keyword(args [][]byte) int {
	argc := len(args)
	start, end, dir := k.StartFrom, argc-1, 1
	if k.StartFrom < 0 {
		start, end, dir = argc+k.StartFrom, 1, -1
	}
	for i := start; i >= 1 && i < argc; i += dir {
		if strings.EqualFold(string(args[i]), k.Keyword) {
			return i + 1
		}
		if i == end {
			break
		}
	}
	return 0
}

// ChannelArgs returns the arguments of args that are pub/sub channels
// (or patterns: s.Channels.Patterns). It never panics.
func (s *Spec) ChannelArgs(args [][]byte) [][]byte {
	r := s.Channels
	if r.First <= 0 || r.First >= len(args) {
		return nil
	}
	last := r.Last
	if last < 0 {
		last += len(args)
	}
	if last >= len(args) {
		last = len(args) - 1
	}
	if last < r.First {
		return nil
	}
	return args[r.First : last+1 : last+1]
}

// legacyRange derives COMMAND's first, last and step and the movablekeys
// flag from the key specifications, as Redis 7 does
// (populateCommandLegacyRangeSpec).
func (s *Spec) legacyRange() {
	s.first, s.last, s.step, s.movable = 0, 0, 0, false
	if len(s.Keys) == 0 {
		return
	}
	rangeOf := func(k *KeySpec) bool { return k.Index > 0 && !k.KeyNum }
	if len(s.Keys) == 1 && rangeOf(&s.Keys[0]) {
		k := &s.Keys[0]
		s.first, s.last, s.step = k.Index, k.LastKey, k.KeyStep
		if s.last >= 0 {
			s.last += s.first
		}
		s.movable = k.Flags&KeyIncomplete != 0
		return
	}
	first, last, prevLast := -1, 0, 0
	for i := range s.Keys {
		k := &s.Keys[i]
		if !rangeOf(k) || k.KeyStep != 1 || (prevLast != 0 && prevLast != k.Index-1) {
			s.movable = true
			continue
		}
		if k.Flags&KeyIncomplete != 0 {
			s.movable = true
		}
		if first < 0 || k.Index < first {
			first = k.Index
		}
		abs := k.LastKey
		if abs >= 0 {
			abs += k.Index
		}
		// Redis compares unsigned: a negative (to the end) wins.
		if uint(abs) > uint(last) {
			last = abs
		}
		prevLast = last
	}
	if first < 0 {
		s.movable = true
		return
	}
	s.first, s.last, s.step = first, last, 1
}
