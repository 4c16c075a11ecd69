package resp

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"reflect"
	"testing"

	"github.com/locknode/locknode/fsm/reply"
)

// FuzzReader: the reader never panics, reports only protocol errors or
// EOFs, stays within its limits, and every command it parses round-trips
// through Writer.WriteCommand unchanged.
func FuzzReader(f *testing.F) {
	for _, s := range []string{
		"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n",
		"PING\r\n",
		"SET \"a b\" 'c' \"\\x41\"\r\n",
		"*0\r\n*-1\r\n",
		"*1\r\n$-1\r\n",
		"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n",
		"*2\r\n+foo\r\n",
		"\"unbalanced\r\n",
	} {
		f.Add([]byte(s))
	}
	cfg := Config{MaxArgs: 64, MaxBulkBytes: 4096, MaxInlineBytes: 1024, MaxCommandBytes: 8192, BufferSize: 64}
	f.Fuzz(func(t *testing.T, in []byte) {
		r := NewReader(bytes.NewReader(in), cfg)
		var cmds [][][]byte
		for {
			args, err := r.ReadCommand()
			if err != nil {
				var pe *ProtocolError
				if err != io.EOF && err != io.ErrUnexpectedEOF && !errors.As(err, &pe) {
					t.Fatalf("unexpected error type %T: %v", err, err)
				}
				break
			}
			if len(args) == 0 || len(args) > cfg.MaxArgs {
				t.Fatalf("bad arg count %d", len(args))
			}
			total := 0
			for _, a := range args {
				if len(a) > cfg.MaxBulkBytes {
					t.Fatalf("arg longer than the limit: %d", len(a))
				}
				total += len(a)
			}
			if total > cfg.MaxCommandBytes || total > len(in) {
				t.Fatalf("command of %d bytes from %d input bytes", total, len(in))
			}
			cmds = append(cmds, CloneArgs(args))
		}
		// Bounded memory: the reader's buffers never exceed the limits
		// (plus growth slack), whatever lengths the input declared.
		if cap(r.buf) > 2*cfg.MaxCommandBytes+64<<10 || cap(r.line) > 2*cfg.MaxInlineBytes+2*cfg.BufferSize {
			t.Fatalf("buffers grew to %d/%d", cap(r.buf), cap(r.line))
		}
		var out bytes.Buffer
		w := NewWriter(&out, 0)
		for _, c := range cmds {
			w.WriteCommand(c)
		}
		w.Flush()
		r2 := NewReader(&out, cfg)
		for i, c := range cmds {
			args, err := r2.ReadCommand()
			if err != nil {
				t.Fatalf("re-reading command %d: %v", i, err)
			}
			if !reflect.DeepEqual(strs(args), strs(c)) {
				t.Fatalf("round trip: got %q, want %q", strs(args), strs(c))
			}
		}
		if _, err := r2.ReadCommand(); err != io.EOF {
			t.Fatalf("trailing data after round trip: %v", err)
		}
	})
}

// FuzzWriter: any reply tree written in either protocol parses back as one
// value of the expected shape.
func FuzzWriter(f *testing.F) {
	f.Add([]byte("abc"), int64(7), uint8(3))
	f.Fuzz(func(t *testing.T, s []byte, n int64, shape uint8) {
		r := build(string(s), n, shape, 3)
		for _, proto := range []int{2, 3} {
			var buf bytes.Buffer
			w := NewWriter(&buf, 0)
			w.Proto = proto
			w.WriteReply(r)
			w.Flush()
			text := buf.String()
			br := bufio.NewReader(&buf)
			v, err := ReadValue(br)
			if err != nil {
				t.Fatalf("RESP%d: %v in %q", proto, err, text)
			}
			if br.Buffered() != 0 || buf.Len() != 0 {
				t.Fatalf("RESP%d: bytes left after one reply in %q", proto, text)
			}
			checkValue(t, r, v, proto)
		}
	})
}

func build(s string, n int64, shape uint8, depth int) reply.Reply {
	switch k := reply.Kind(shape % 11); k {
	case reply.Array, reply.Map, reply.Set, reply.Pairs:
		if depth == 0 {
			return reply.NewInt(n)
		}
		items := []reply.Reply{build(s, n, shape/8, depth-1), build(s, n+1, shape/3, depth-1)}
		if shape%2 == 1 { // odd item counts must not break the stream
			items = append(items, reply.NewBulk(s))
		}
		return reply.Reply{Kind: k, Arr: items}
	case reply.Int:
		return reply.NewInt(n)
	case reply.Double:
		return reply.Reply{Kind: reply.Double, Str: "1.25"}
	default:
		return reply.Reply{Kind: k, Str: s}
	}
}

func checkValue(t *testing.T, r reply.Reply, v Value, proto int) {
	t.Helper()
	switch r.Kind {
	case reply.Nil, reply.NilArray:
		if !v.Null {
			t.Fatalf("RESP%d: want null, got %v", proto, v)
		}
	case reply.Int:
		if v.Type != ':' || v.Int != r.Int {
			t.Fatalf("RESP%d: want %d, got %v", proto, r.Int, v)
		}
	case reply.Bulk:
		if v.Type != '$' || v.Str != r.Str {
			t.Fatalf("RESP%d: want bulk %q, got %v", proto, r.Str, v)
		}
	case reply.Array:
		if v.Type != '*' || len(v.Elems) != len(r.Arr) {
			t.Fatalf("RESP%d: want array of %d, got %v", proto, len(r.Arr), v)
		}
		for i := range r.Arr {
			checkValue(t, r.Arr[i], v.Elems[i], proto)
		}
	case reply.Map, reply.Set, reply.Pairs:
		if len(v.Elems) > len(r.Arr) {
			t.Fatalf("RESP%d: %d items from %d", proto, len(v.Elems), len(r.Arr))
		}
	}
}
