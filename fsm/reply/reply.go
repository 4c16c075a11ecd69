// Package reply holds the Redis-shaped reply value that the FSM's Redis
// commands and Lua scripts produce. It is a leaf package: the FSM, the Lua
// engine and the RESP bridge all speak it, and it imports nothing of ours.
//
// A Reply is protocol-neutral; the RESP bridge renders it as RESP2 or RESP3
// (Double becomes a bulk string in RESP2, NilArray becomes *-1 / _).
package reply

import "strconv"

// Kind says which field of a Reply is meaningful.
type Kind uint8

// Reply kinds.
const (
	Nil      Kind = iota // null bulk string ($-1 / _)
	Status               // simple string (+OK); Str
	Error                // error (-ERR ...); Str is the whole text without the leading '-'
	Int                  // integer; Int
	Bulk                 // bulk string; Str
	Array                // array; Arr (an empty, non-nil array is *0)
	NilArray             // null array (*-1 / _), e.g. EXEC after a broken WATCH
	Double               // RESP3 double (ZSCORE); Str holds Redis' text form
	// Map is a RESP3 map (HGETALL); Arr holds keys and values alternately
	// and RESP2 renders it as that flat array.
	Map
	// Set is a RESP3 set (SMEMBERS); a plain array in RESP2.
	Set
	// Pairs is a list of (member, score) pairs (ZRANGE WITHSCORES); Arr is
	// flat, RESP2 renders it flat and RESP3 as an array of 2-arrays.
	Pairs
	// Bool is a RESP3 boolean (a script's true or false after
	// redis.setresp(3)); Int is 1 or 0, which RESP2 sends as an integer.
	Bool
	// BigNumber is a RESP3 big number (a script's {big_number=...}); Str
	// holds its digits, which RESP2 sends as a bulk string.
	BigNumber
	// Verbatim is a RESP3 verbatim string (a script's
	// {verbatim_string=...}); Str is "fmt:text" with a three-byte format,
	// and RESP2 sends only text as a bulk string.
	Verbatim
)

// Aggregate reports whether a reply of kind k carries its items in Arr.
func (k Kind) Aggregate() bool { return k == Array || k == Map || k == Set || k == Pairs }

// Reply is one Redis reply.
type Reply struct {
	Kind Kind
	Str  string
	Int  int64
	Arr  []Reply
}

// Common replies.
var (
	OK   = Reply{Kind: Status, Str: "OK"}
	Null = Reply{Kind: Nil}
)

// NewInt returns an integer reply.
func NewInt(n int64) Reply { return Reply{Kind: Int, Int: n} }

// NewBulk returns a bulk string reply.
func NewBulk(s string) Reply { return Reply{Kind: Bulk, Str: s} }

// NewStatus returns a simple string reply.
func NewStatus(s string) Reply { return Reply{Kind: Status, Str: s} }

// NewError returns an error reply; msg is the full text, e.g. "ERR syntax error".
func NewError(msg string) Reply { return Reply{Kind: Error, Str: msg} }

// NewArray returns an array reply.
func NewArray(items ...Reply) Reply {
	if items == nil {
		items = []Reply{}
	}
	return Reply{Kind: Array, Arr: items}
}

// NewDouble returns a double reply formatted as Redis formats scores.
func NewDouble(f float64) Reply {
	return Reply{Kind: Double, Str: strconv.FormatFloat(f, 'g', -1, 64)}
}

// IsError reports whether r is an error reply.
func (r Reply) IsError() bool { return r.Kind == Error }
