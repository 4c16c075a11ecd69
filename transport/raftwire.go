package transport

import (
	"encoding/binary"
	"fmt"
	"io"
	"reflect"
	"time"
	"unsafe"

	"github.com/hashicorp/raft"
)

// The lean raft wire format: raft's RPCs in a binary framing of our own,
// encoded field by field without reflection (raft's NetworkTransport uses
// msgpack, which costs an allocation per entry and per field on both
// sides). A connection of this kind starts with the type byte typeRaftLean
// (after TLS, like every connection of the peer port), which the acceptor
// acknowledges by sending it back at once (a release without the framing
// closes the connection instead: ErrLeanRefused); the dialer sends request
// frames without waiting for it, and the acceptor answers each, in order:
//
//	length uint32 big-endian   = 1 + len(body)
//	kind   byte                (rpcKind: the same in the request and its answer)
//	body   length-1 bytes
//
// Integers in a body are uvarints (AppendedAt a signed varint of unix
// nanoseconds, 0 for the zero time), byte strings a uvarint length then
// the bytes, flags one byte. A request body is the RPC header (protocol
// version, id, addr) followed by the request's fields in the order of
// raft's struct; an answer body is an error text (empty: none), the
// header, then the response's fields. InstallSnapshot has no lean form:
// it streams, is rare, and stays on raft's own transport.
//
// Decoding never trusts a length: each is checked against the bytes that
// are left before anything is allocated, and a frame longer than
// MaxRaftFrame is refused after reading its 5-byte header.

// MaxRaftFrame bounds one lean raft frame. An AppendEntries that would be
// longer is sent over raft's own transport instead (ErrTooLarge), so the
// bound never stops replication.
const MaxRaftFrame = 64 << 20

// raftFrameHeader is the length field and the kind byte.
const raftFrameHeader = 5

// rpcKind is what a lean raft frame carries.
type rpcKind byte

const (
	rpcKindAppend     rpcKind = 1 // AppendEntries (and heartbeats)
	rpcKindVote       rpcKind = 2 // RequestVote
	rpcKindPreVote    rpcKind = 3 // RequestPreVote
	rpcKindTimeoutNow rpcKind = 4 // TimeoutNow
)

func (k rpcKind) String() string {
	switch k {
	case rpcKindAppend:
		return "AppendEntries"
	case rpcKindVote:
		return "RequestVote"
	case rpcKindPreVote:
		return "RequestPreVote"
	case rpcKindTimeoutNow:
		return "TimeoutNow"
	}
	return fmt.Sprintf("kind(%d)", byte(k))
}

// Entry flags.
const (
	flagSuccess            = 1 << 0
	flagNoRetryBackoff     = 1 << 1
	flagLeadershipTransfer = 1 << 0
	flagGranted            = 1 << 0
)

// beginRaftFrame starts a frame of kind k in dst (reused: truncated);
// endRaftFrame fills in its length.
func beginRaftFrame(dst []byte, k rpcKind) []byte {
	return append(dst[:0], 0, 0, 0, 0, byte(k))
}

func endRaftFrame(b []byte) ([]byte, error) {
	if len(b)-4 > MaxRaftFrame {
		return b, fmt.Errorf("%w: raft frame of %d bytes exceeds %d", ErrTooLarge, len(b)-4, MaxRaftFrame)
	}
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b, nil
}

func appendBytes(b, s []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendHeader(b []byte, h *raft.RPCHeader) []byte {
	b = binary.AppendUvarint(b, uint64(h.ProtocolVersion))
	b = appendBytes(b, h.ID)
	return appendBytes(b, h.Addr)
}

func flag(v bool, f byte) byte {
	if v {
		return f
	}
	return 0
}

// appendAppendRequest encodes an AppendEntries request as a whole frame.
func appendAppendRequest(dst []byte, r *raft.AppendEntriesRequest) ([]byte, error) {
	b := beginRaftFrame(dst, rpcKindAppend)
	b = appendHeader(b, &r.RPCHeader)
	b = binary.AppendUvarint(b, r.Term)
	//lint:ignore SA1019 raft still fills and reads it; the framing carries what msgpack carries
	b = appendBytes(b, r.Leader)
	b = binary.AppendUvarint(b, r.PrevLogEntry)
	b = binary.AppendUvarint(b, r.PrevLogTerm)
	b = binary.AppendUvarint(b, r.LeaderCommitIndex)
	b = binary.AppendUvarint(b, uint64(len(r.Entries)))
	for _, e := range r.Entries {
		b = binary.AppendUvarint(b, e.Index)
		b = binary.AppendUvarint(b, e.Term)
		b = append(b, byte(e.Type))
		b = appendBytes(b, e.Data)
		b = appendBytes(b, e.Extensions)
		var at int64
		if !e.AppendedAt.IsZero() {
			at = e.AppendedAt.UnixNano()
		}
		b = binary.AppendVarint(b, at)
	}
	return endRaftFrame(b)
}

func appendAppendResponse(dst []byte, r *raft.AppendEntriesResponse, rpcErr error) ([]byte, error) {
	b := beginRaftFrame(dst, rpcKindAppend)
	b = appendErr(b, rpcErr)
	b = appendHeader(b, &r.RPCHeader)
	b = binary.AppendUvarint(b, r.Term)
	b = binary.AppendUvarint(b, r.LastLog)
	b = append(b, flag(r.Success, flagSuccess)|flag(r.NoRetryBackoff, flagNoRetryBackoff), commitPush(r))
	return endRaftFrame(b)
}

func appendVoteRequest(dst []byte, r *raft.RequestVoteRequest) ([]byte, error) {
	b := beginRaftFrame(dst, rpcKindVote)
	b = appendHeader(b, &r.RPCHeader)
	b = binary.AppendUvarint(b, r.Term)
	//lint:ignore SA1019 raft still fills and reads it; the framing carries what msgpack carries
	b = appendBytes(b, r.Candidate)
	b = binary.AppendUvarint(b, r.LastLogIndex)
	b = binary.AppendUvarint(b, r.LastLogTerm)
	b = append(b, flag(r.LeadershipTransfer, flagLeadershipTransfer))
	return endRaftFrame(b)
}

func appendVoteResponse(dst []byte, r *raft.RequestVoteResponse, rpcErr error) ([]byte, error) {
	b := beginRaftFrame(dst, rpcKindVote)
	b = appendErr(b, rpcErr)
	b = appendHeader(b, &r.RPCHeader)
	b = binary.AppendUvarint(b, r.Term)
	b = appendBytes(b, r.Peers)
	b = append(b, flag(r.Granted, flagGranted))
	return endRaftFrame(b)
}

func appendPreVoteRequest(dst []byte, r *raft.RequestPreVoteRequest) ([]byte, error) {
	b := beginRaftFrame(dst, rpcKindPreVote)
	b = appendHeader(b, &r.RPCHeader)
	b = binary.AppendUvarint(b, r.Term)
	b = binary.AppendUvarint(b, r.LastLogIndex)
	b = binary.AppendUvarint(b, r.LastLogTerm)
	return endRaftFrame(b)
}

func appendPreVoteResponse(dst []byte, r *raft.RequestPreVoteResponse, rpcErr error) ([]byte, error) {
	b := beginRaftFrame(dst, rpcKindPreVote)
	b = appendErr(b, rpcErr)
	b = appendHeader(b, &r.RPCHeader)
	b = binary.AppendUvarint(b, r.Term)
	b = append(b, flag(r.Granted, flagGranted))
	return endRaftFrame(b)
}

func appendTimeoutNowRequest(dst []byte, r *raft.TimeoutNowRequest) ([]byte, error) {
	b := beginRaftFrame(dst, rpcKindTimeoutNow)
	return endRaftFrame(appendHeader(b, &r.RPCHeader))
}

func appendTimeoutNowResponse(dst []byte, r *raft.TimeoutNowResponse, rpcErr error) ([]byte, error) {
	b := beginRaftFrame(dst, rpcKindTimeoutNow)
	b = appendErr(b, rpcErr)
	return endRaftFrame(appendHeader(b, &r.RPCHeader))
}

func appendErr(b []byte, err error) []byte {
	if err == nil {
		return append(b, 0)
	}
	return appendBytes(b, []byte(err.Error()))
}

// wireDec decodes one frame body. The first malformation sticks in err;
// later reads return zero values, so a decoder checks err once at the end.
type wireDec struct {
	b   []byte
	off int
	err error
}

func (d *wireDec) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: raft frame: bad %s at byte %d", ErrProtocol, what, d.off)
	}
}

func (d *wireDec) uvarint(what string) uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b[d.off:])
	if n <= 0 {
		d.fail(what)
		return 0
	}
	d.off += n
	return v
}

func (d *wireDec) varint(what string) int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b[d.off:])
	if n <= 0 {
		d.fail(what)
		return 0
	}
	d.off += n
	return v
}

func (d *wireDec) byte1(what string) byte {
	if d.err != nil {
		return 0
	}
	if d.off >= len(d.b) {
		d.fail(what)
		return 0
	}
	c := d.b[d.off]
	d.off++
	return c
}

// bytes returns a length-prefixed string, aliasing the frame (nil when
// empty, as msgpack decodes it).
func (d *wireDec) bytes(what string) []byte {
	n := d.uvarint(what)
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)-d.off) {
		d.fail(what + " length")
		return nil
	}
	if n == 0 {
		return nil
	}
	s := d.b[d.off : d.off+int(n) : d.off+int(n)]
	d.off += int(n)
	return s
}

// owned copies a string out of the frame, which is reused.
func owned(s []byte) []byte {
	if len(s) == 0 {
		return nil
	}
	return append([]byte(nil), s...)
}

func (d *wireDec) header(h *raft.RPCHeader) {
	pv := d.uvarint("protocol version")
	if pv > 1<<16 { // raft checks the version itself; this only keeps it an int
		d.fail("protocol version")
	}
	h.ProtocolVersion = raft.ProtocolVersion(pv)
	// ID and Addr in one allocation.
	id, addr := d.bytes("id"), d.bytes("addr")
	if len(id)+len(addr) > 0 {
		both := make([]byte, 0, len(id)+len(addr))
		both = append(append(both, id...), addr...)
		h.ID, h.Addr = nilIfEmpty(both[:len(id):len(id)]), nilIfEmpty(both[len(id):])
	}
}

func nilIfEmpty(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return b
}

func (d *wireDec) end() error {
	if d.err == nil && d.off != len(d.b) {
		d.err = fmt.Errorf("%w: raft frame: %d bytes after the last field", ErrProtocol, len(d.b)-d.off)
	}
	return d.err
}

// minEntryBytes is the smallest encoding of one entry (index, term,
// type, two empty strings, time): a count above remaining/minEntryBytes
// is a lie, refused before the entries are allocated.
const minEntryBytes = 6

// decodeAppendRequest decodes an AppendEntries body into r. The entries'
// data and extensions are copied out of body (which the caller reuses)
// into one allocation.
func decodeAppendRequest(body []byte, r *raft.AppendEntriesRequest) error {
	d := wireDec{b: body}
	d.header(&r.RPCHeader)
	r.Term = d.uvarint("term")
	//lint:ignore SA1019 raft still fills and reads it; the framing carries what msgpack carries
	r.Leader = owned(d.bytes("leader"))
	r.PrevLogEntry = d.uvarint("prev log entry")
	r.PrevLogTerm = d.uvarint("prev log term")
	r.LeaderCommitIndex = d.uvarint("leader commit index")
	n := d.uvarint("entry count")
	if d.err != nil {
		return d.err
	}
	if n > uint64(len(body)-d.off)/minEntryBytes {
		d.fail("entry count")
		return d.err
	}
	r.Entries = nil
	if n == 0 {
		return d.end()
	}
	logs := make([]raft.Log, n)
	ptrs := make([]*raft.Log, n)
	// The entries' bytes are at most what is left of the body: one slab.
	slab := make([]byte, 0, len(body)-d.off)
	for i := range logs {
		e := &logs[i]
		e.Index = d.uvarint("entry index")
		e.Term = d.uvarint("entry term")
		e.Type = raft.LogType(d.byte1("entry type"))
		data, ext := d.bytes("entry data"), d.bytes("entry extensions")
		if len(data) > 0 {
			slab = append(slab, data...)
			e.Data = slab[len(slab)-len(data) : len(slab) : len(slab)]
		}
		if len(ext) > 0 {
			slab = append(slab, ext...)
			e.Extensions = slab[len(slab)-len(ext) : len(slab) : len(slab)]
		}
		if at := d.varint("entry time"); at != 0 {
			e.AppendedAt = time.Unix(0, at)
		}
		ptrs[i] = e
		if d.err != nil {
			return d.err
		}
	}
	r.Entries = ptrs
	return d.end()
}

// decodeErr reads an answer's error text; a non-empty one becomes an
// error (the remote raft refused the RPC), returned beside the decoded
// response as raft's NetworkTransport does.
func (d *wireDec) remoteErr() error {
	s := d.bytes("error")
	if len(s) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s", ErrRemote, s)
}

func decodeAppendResponse(body []byte, r *raft.AppendEntriesResponse) (rpcErr, err error) {
	d := wireDec{b: body}
	rpcErr = d.remoteErr()
	d.header(&r.RPCHeader)
	r.Term = d.uvarint("term")
	r.LastLog = d.uvarint("last log")
	f := d.byte1("flags")
	r.Success, r.NoRetryBackoff = f&flagSuccess != 0, f&flagNoRetryBackoff != 0
	setCommitPush(r, d.byte1("commit push"))
	return rpcErr, d.end()
}

func decodeVoteRequest(body []byte, r *raft.RequestVoteRequest) error {
	d := wireDec{b: body}
	d.header(&r.RPCHeader)
	r.Term = d.uvarint("term")
	//lint:ignore SA1019 raft still fills and reads it; the framing carries what msgpack carries
	r.Candidate = owned(d.bytes("candidate"))
	r.LastLogIndex = d.uvarint("last log index")
	r.LastLogTerm = d.uvarint("last log term")
	r.LeadershipTransfer = d.byte1("flags")&flagLeadershipTransfer != 0
	return d.end()
}

func decodeVoteResponse(body []byte, r *raft.RequestVoteResponse) (rpcErr, err error) {
	d := wireDec{b: body}
	rpcErr = d.remoteErr()
	d.header(&r.RPCHeader)
	r.Term = d.uvarint("term")
	r.Peers = owned(d.bytes("peers"))
	r.Granted = d.byte1("flags")&flagGranted != 0
	return rpcErr, d.end()
}

func decodePreVoteRequest(body []byte, r *raft.RequestPreVoteRequest) error {
	d := wireDec{b: body}
	d.header(&r.RPCHeader)
	r.Term = d.uvarint("term")
	r.LastLogIndex = d.uvarint("last log index")
	r.LastLogTerm = d.uvarint("last log term")
	return d.end()
}

func decodePreVoteResponse(body []byte, r *raft.RequestPreVoteResponse) (rpcErr, err error) {
	d := wireDec{b: body}
	rpcErr = d.remoteErr()
	d.header(&r.RPCHeader)
	r.Term = d.uvarint("term")
	r.Granted = d.byte1("flags")&flagGranted != 0
	return rpcErr, d.end()
}

func decodeTimeoutNowRequest(body []byte, r *raft.TimeoutNowRequest) error {
	d := wireDec{b: body}
	d.header(&r.RPCHeader)
	return d.end()
}

func decodeTimeoutNowResponse(body []byte, r *raft.TimeoutNowResponse) (rpcErr, err error) {
	d := wireDec{b: body}
	rpcErr = d.remoteErr()
	d.header(&r.RPCHeader)
	return rpcErr, d.end()
}

// readRaftFrame reads one frame into buf (reused; grown as bytes arrive,
// so a lying length costs only what the peer really sends) and returns
// its kind and body, which aliases buf. A malformed frame returns an error
// wrapping ErrProtocol; the caller drops the connection.
func readRaftFrame(r io.Reader, hdr *[raftFrameHeader]byte, buf *[]byte) (rpcKind, []byte, error) {
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:4])
	k := rpcKind(hdr[4])
	if n < 1 {
		return 0, nil, fmt.Errorf("%w: raft frame length 0", ErrProtocol)
	}
	if n > MaxRaftFrame {
		return 0, nil, fmt.Errorf("%w: raft frame of %d bytes exceeds the limit of %d", ErrProtocol, n, MaxRaftFrame)
	}
	if k < rpcKindAppend || k > rpcKindTimeoutNow {
		return 0, nil, fmt.Errorf("%w: unknown raft frame %v", ErrProtocol, k)
	}
	size := int(n) - 1
	if size <= cap(*buf) {
		b := (*buf)[:size]
		if _, err := io.ReadFull(r, b); err != nil {
			return 0, nil, unexpectedEOF(err)
		}
		return k, b, nil
	}
	b, err := readBody(r, size)
	if err != nil {
		return 0, nil, err
	}
	if cap(b) <= maxKeptBuffer {
		*buf = b
	}
	return k, b, nil
}

// The fork of raft locknode builds with (third_party/raft) has
// AppendEntriesResponse.LocknodeCommitPush, a uint8 by which a follower
// says whether it wants commit indexes pushed; upstream raft, which a
// program embedding locknode may build with, has not. The field is found
// once by reflection and then read and written at its offset; without it
// the framing carries 0 ("yes", what an upstream follower says).
var commitPushOffset, hasCommitPush = func() (uintptr, bool) {
	f, ok := reflect.TypeOf(raft.AppendEntriesResponse{}).FieldByName("LocknodeCommitPush")
	if !ok || f.Type.Kind() != reflect.Uint8 || len(f.Index) != 1 {
		return 0, false
	}
	return f.Offset, true
}()

func commitPush(r *raft.AppendEntriesResponse) byte {
	if !hasCommitPush {
		return 0
	}
	return *(*uint8)(unsafe.Add(unsafe.Pointer(r), commitPushOffset))
}

func setCommitPush(r *raft.AppendEntriesResponse, v byte) {
	if hasCommitPush {
		*(*uint8)(unsafe.Add(unsafe.Pointer(r), commitPushOffset)) = v
	}
}

// maxKeptBuffer is the largest read or write buffer a connection keeps
// between frames: a rare huge AppendEntries does not pin its size.
const maxKeptBuffer = 1 << 20
