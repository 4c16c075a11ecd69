package resp

import (
	"bufio"
	"io"
	"strconv"
	"strings"

	"github.com/locknode/locknode/fsm/reply"
)

// Writer renders replies for one connection. Proto (2 or 3) chooses the
// encoding and may change between replies (HELLO). Output is buffered:
// call Flush at the end of a batch. It is not safe for concurrent use.
type Writer struct {
	bw    *bufio.Writer
	Proto int
	// OnError, when set, is called with every error reply written,
	// nested ones (in arrays) included.
	OnError func(msg string)
	num     [24]byte // scratch for integers
}

// NewWriter returns a RESP2 Writer over w.
func NewWriter(w io.Writer, size int) *Writer {
	if size <= 0 {
		size = DefaultBufferSize
	}
	return &Writer{bw: bufio.NewWriterSize(w, size), Proto: 2}
}

// Flush writes buffered output.
func (w *Writer) Flush() error { return w.bw.Flush() }

// Size returns the size of the output buffer (fixed: replies larger than
// it are written through).
func (w *Writer) Size() int { return w.bw.Size() }

// Buffered returns the bytes not yet flushed.
func (w *Writer) Buffered() int { return w.bw.Buffered() }

func (w *Writer) header(prefix byte, n int64) {
	w.bw.WriteByte(prefix)
	w.bw.Write(strconv.AppendInt(w.num[:0], n, 10))
	w.bw.WriteString("\r\n")
}

// line writes prefix, s with CR and LF replaced by spaces (a simple string
// or error cannot hold them), and CRLF.
func (w *Writer) line(prefix byte, s string) {
	w.bw.WriteByte(prefix)
	if strings.ContainsAny(s, "\r\n") {
		s = strings.Map(func(r rune) rune {
			if r == '\r' || r == '\n' {
				return ' '
			}
			return r
		}, s)
	}
	w.bw.WriteString(s)
	w.bw.WriteString("\r\n")
}

// WriteStatus writes a simple string (+OK).
func (w *Writer) WriteStatus(s string) { w.line('+', s) }

// WriteError writes an error; msg is the full text ("ERR syntax error").
func (w *Writer) WriteError(msg string) {
	if w.OnError != nil {
		w.OnError(msg)
	}
	w.line('-', msg)
}

// WriteInt writes an integer.
func (w *Writer) WriteInt(n int64) { w.header(':', n) }

// WriteBulk writes a bulk string.
func (w *Writer) WriteBulk(b []byte) {
	w.header('$', int64(len(b)))
	w.bw.Write(b)
	w.bw.WriteString("\r\n")
}

// WriteBulkString writes a bulk string.
func (w *Writer) WriteBulkString(s string) {
	w.header('$', int64(len(s)))
	w.bw.WriteString(s)
	w.bw.WriteString("\r\n")
}

// WriteNull writes a null: $-1 in RESP2, _ in RESP3.
func (w *Writer) WriteNull() {
	if w.Proto >= 3 {
		w.bw.WriteString("_\r\n")
		return
	}
	w.bw.WriteString("$-1\r\n")
}

// WriteNullArray writes a null array: *-1 in RESP2, _ in RESP3.
func (w *Writer) WriteNullArray() {
	if w.Proto >= 3 {
		w.bw.WriteString("_\r\n")
		return
	}
	w.bw.WriteString("*-1\r\n")
}

// WriteArrayLen starts an array of n elements.
func (w *Writer) WriteArrayLen(n int) { w.header('*', int64(n)) }

// WriteMapLen starts a map of n key/value pairs (a flat array of 2n
// elements in RESP2).
func (w *Writer) WriteMapLen(n int) {
	if w.Proto >= 3 {
		w.header('%', int64(n))
		return
	}
	w.header('*', int64(2*n))
}

// WriteSetLen starts a set (an array in RESP2).
func (w *Writer) WriteSetLen(n int) {
	if w.Proto >= 3 {
		w.header('~', int64(n))
		return
	}
	w.header('*', int64(n))
}

// WritePushLen starts an out-of-band push (an array in RESP2, where
// pub/sub messages are plain arrays).
func (w *Writer) WritePushLen(n int) {
	if w.Proto >= 3 {
		w.header('>', int64(n))
		return
	}
	w.header('*', int64(n))
}

// WriteBool writes a boolean (:1 / :0 in RESP2).
func (w *Writer) WriteBool(b bool) {
	if w.Proto >= 3 {
		if b {
			w.bw.WriteString("#t\r\n")
		} else {
			w.bw.WriteString("#f\r\n")
		}
		return
	}
	if b {
		w.WriteInt(1)
	} else {
		w.WriteInt(0)
	}
}

// WriteDouble writes a double given in Redis' text form ("1.5", "inf");
// RESP2 gets it as a bulk string.
func (w *Writer) WriteDouble(s string) {
	switch s {
	case "+Inf", "Inf", "+inf":
		s = "inf"
	case "-Inf":
		s = "-inf"
	case "NaN":
		s = "nan"
	}
	if w.Proto >= 3 {
		w.line(',', s)
		return
	}
	w.WriteBulkString(s)
}

// WriteReply writes r.
func (w *Writer) WriteReply(r reply.Reply) {
	switch r.Kind {
	case reply.Nil:
		w.WriteNull()
	case reply.Status:
		w.WriteStatus(r.Str)
	case reply.Error:
		w.WriteError(r.Str)
	case reply.Int:
		w.WriteInt(r.Int)
	case reply.Bulk:
		w.WriteBulkString(r.Str)
	case reply.Array:
		w.WriteArrayLen(len(r.Arr))
		for _, e := range r.Arr {
			w.WriteReply(e)
		}
	case reply.Map:
		// An odd trailing item would desynchronise the stream: never
		// write more items than the header announces.
		n := len(r.Arr) / 2
		w.WriteMapLen(n)
		for _, e := range r.Arr[:2*n] {
			w.WriteReply(e)
		}
	case reply.Set:
		w.WriteSetLen(len(r.Arr))
		for _, e := range r.Arr {
			w.WriteReply(e)
		}
	case reply.Pairs:
		if w.Proto < 3 {
			n := len(r.Arr) &^ 1
			w.WriteArrayLen(n)
			for _, e := range r.Arr[:n] {
				w.WriteReply(e)
			}
			break
		}
		w.WriteArrayLen(len(r.Arr) / 2)
		for i := 0; i+1 < len(r.Arr); i += 2 {
			w.WriteArrayLen(2)
			w.WriteReply(r.Arr[i])
			w.WriteReply(r.Arr[i+1])
		}
	case reply.NilArray:
		w.WriteNullArray()
	case reply.Double:
		w.WriteDouble(r.Str)
	case reply.Bool:
		w.WriteBool(r.Int != 0)
	case reply.BigNumber:
		if w.Proto >= 3 {
			w.line('(', r.Str)
		} else {
			w.WriteBulkString(r.Str)
		}
	case reply.Verbatim:
		switch {
		case w.Proto >= 3 && len(r.Str) >= 4:
			w.header('=', int64(len(r.Str)))
			w.bw.WriteString(r.Str)
			w.bw.WriteString("\r\n")
		case len(r.Str) >= 4:
			w.WriteBulkString(r.Str[4:])
		default:
			w.WriteBulkString("")
		}
	default:
		w.WriteError("ERR internal error: unknown reply kind " + strconv.Itoa(int(r.Kind)))
	}
}

// WriteCommand writes args as a client would send them: an array of bulk
// strings (the form Reader.ReadCommand parses).
func (w *Writer) WriteCommand(args [][]byte) {
	w.WriteArrayLen(len(args))
	for _, a := range args {
		w.WriteBulk(a)
	}
}
