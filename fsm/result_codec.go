package fsm

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/locknode/locknode/fsm/reply"
)

// The Result encoding carries a leader's answer to a follower that
// forwarded the command (cluster's apply RPCs). Nodes of different
// releases forward to each other, so the bytes are part of the wire
// format: flags and reply kinds are append only. Events do not travel:
// the follower applies the same entry and sees them itself.
const (
	rGranted = 1 << iota
	rQueued
	rReleased
	rErr
	rReply
	rNow
)

// maxReplyDepth bounds the nesting of a decoded reply, so a hostile
// encoding cannot exhaust the stack.
const maxReplyDepth = 64

var errBadResult = errors.New("fsm: malformed result")

// AppendResult appends the encoding of r to b. A refusal travels as its
// ErrorCode and its text, so the receiver's errors.Is still finds the
// sentinel.
func AppendResult(b []byte, r *Result) []byte {
	var flags byte
	if r.Granted {
		flags |= rGranted
	}
	if r.Queued {
		flags |= rQueued
	}
	if r.Released {
		flags |= rReleased
	}
	if r.Err != nil {
		flags |= rErr
	}
	if r.Reply.Kind != reply.Nil {
		flags |= rReply
	}
	if r.Now != 0 {
		flags |= rNow
	}
	b = append(b, flags)
	b = binary.AppendUvarint(b, r.Index)
	b = binary.AppendUvarint(b, r.Fence)
	b = binary.AppendVarint(b, r.Deadline)
	b = binary.AppendVarint(b, int64(r.Count))
	if flags&rNow != 0 {
		b = binary.AppendVarint(b, r.Now)
	}
	if r.Err != nil {
		b = append(b, ErrorCode(r.Err))
		b = appendResultStr(b, r.Err.Error())
	}
	if flags&rReply != 0 {
		b = appendReply(b, r.Reply)
	}
	return b
}

// DecodeResult decodes an AppendResult encoding; it refuses any other
// input (truncated, trailing bytes, unknown reply kinds, replies nested
// too deep). A refusal's error wraps the sentinel its code names (a code
// from a newer release gives an error with the text alone). Events are
// never set.
func DecodeResult(b []byte) (Result, error) {
	var r Result
	if len(b) < 1 {
		return r, errBadResult
	}
	flags := b[0]
	d := decoder{b: b[1:]}
	r.Index = d.uvarint()
	r.Fence = d.uvarint()
	r.Deadline = d.varint()
	r.Count = int(d.varint())
	if flags&rNow != 0 {
		r.Now = d.varint()
	}
	r.Granted = flags&rGranted != 0
	r.Queued = flags&rQueued != 0
	r.Released = flags&rReleased != 0
	if flags&rErr != 0 {
		code := d.byte()
		r.Err = decodedRefusal(code, d.resultStr())
	}
	if flags&rReply != 0 {
		r.Reply = d.reply(0)
	}
	if d.err != nil {
		return Result{}, fmt.Errorf("%w: %w", errBadResult, d.err)
	}
	if len(d.b) != 0 {
		return Result{}, fmt.Errorf("%w: %d trailing bytes", errBadResult, len(d.b))
	}
	return r, nil
}

// remoteError is a refusal decoded from a Result encoding: the sender's
// text, and its sentinel for errors.Is.
type remoteError struct {
	sentinel error
	msg      string
}

func (e *remoteError) Error() string { return e.msg }
func (e *remoteError) Unwrap() error { return e.sentinel }

func decodedRefusal(code uint8, msg string) error {
	if sentinel := ErrorOfCode(code); sentinel != nil {
		return &remoteError{sentinel: sentinel, msg: msg}
	}
	return errors.New(msg)
}

func appendResultStr(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendReply(b []byte, r reply.Reply) []byte {
	b = append(b, byte(r.Kind))
	switch r.Kind {
	case reply.Status, reply.Error, reply.Bulk, reply.Double, reply.BigNumber, reply.Verbatim:
		b = appendResultStr(b, r.Str)
	case reply.Int, reply.Bool:
		b = binary.AppendVarint(b, r.Int)
	case reply.Array, reply.Map, reply.Set, reply.Pairs:
		b = binary.AppendUvarint(b, uint64(len(r.Arr)))
		for _, it := range r.Arr {
			b = appendReply(b, it)
		}
	}
	return b
}

func (d *decoder) byte() byte {
	if d.err != nil {
		return 0
	}
	if len(d.b) == 0 {
		d.err = errTruncated
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

// resultStr reads a string of a Result. Unlike a command's strings it
// has no cap below the input's length: a reply is as long as the value
// the leader read.
func (d *decoder) resultStr() string { return string(d.rawBytes()) }

// rawBytes reads a uvarint length and that many bytes (aliasing the
// input), refusing only a length beyond the input.
func (d *decoder) rawBytes() []byte {
	n := d.uvarint()
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)) {
		d.err = errTruncated
		return nil
	}
	s := d.b[:n:n]
	d.b = d.b[n:]
	return s
}

func (d *decoder) reply(depth int) reply.Reply {
	if depth > maxReplyDepth {
		if d.err == nil {
			d.err = fmt.Errorf("reply nested deeper than %d", maxReplyDepth)
		}
		return reply.Reply{}
	}
	r := reply.Reply{Kind: reply.Kind(d.byte())}
	switch r.Kind {
	case reply.Status, reply.Error, reply.Bulk, reply.Double, reply.BigNumber, reply.Verbatim:
		r.Str = d.resultStr()
	case reply.Int, reply.Bool:
		r.Int = d.varint()
	case reply.Array, reply.Map, reply.Set, reply.Pairs:
		cnt := d.uvarint()
		if d.err == nil && cnt > uint64(len(d.b)) { // every item takes at least one byte
			d.err = fmt.Errorf("reply of %d items exceeds input", cnt)
		}
		if d.err != nil {
			return reply.Reply{}
		}
		r.Arr = make([]reply.Reply, 0, cnt)
		for i := uint64(0); i < cnt && d.err == nil; i++ {
			r.Arr = append(r.Arr, d.reply(depth+1))
		}
	case reply.Nil, reply.NilArray:
	default:
		if d.err == nil {
			d.err = fmt.Errorf("unknown reply kind %d", r.Kind)
		}
	}
	return r
}
