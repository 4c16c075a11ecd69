package resp

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/locknode/locknode/fsm/reply"
)

func strs(args [][]byte) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = string(a)
	}
	return out
}

// readAll parses every command in in; err is the first error other than
// a clean EOF.
func readAll(in string, cfg Config) ([][]string, error) {
	r := NewReader(strings.NewReader(in), cfg)
	var out [][]string
	for {
		args, err := r.ReadCommand()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, strs(args))
	}
}

func TestReaderCommands(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want [][]string
	}{
		{"multibulk", "*2\r\n$3\r\nGET\r\n$1\r\nk\r\n", [][]string{{"GET", "k"}}},
		{"empty bulk", "*2\r\n$4\r\nECHO\r\n$0\r\n\r\n", [][]string{{"ECHO", ""}}},
		{"binary bulk", "*2\r\n$4\r\nECHO\r\n$4\r\na\r\nb\r\n", [][]string{{"ECHO", "a\r\nb"}}},
		{"pipeline", "*1\r\n$4\r\nPING\r\n*1\r\n$4\r\nPING\r\nPING\r\n", [][]string{{"PING"}, {"PING"}, {"PING"}}},
		{"empty multibulks skipped", "*0\r\n*-1\r\n\r\nPING\n", [][]string{{"PING"}}},
		{"inline", "SET k  v\r\n", [][]string{{"SET", "k", "v"}}},
		{"inline LF only", "GET k\n", [][]string{{"GET", "k"}}},
		{"inline quotes", `SET "a b" 'c d' "\x41\n\"" 'it\'s'` + "\r\n", [][]string{{"SET", "a b", "c d", "A\n\"", "it's"}}},
		{"inline empty quoted", `ECHO ""` + "\r\n", [][]string{{"ECHO", ""}}},
		{"inline blank line", "   \r\n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := readAll(tt.in, Config{})
			if err != nil {
				t.Fatalf("error %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
			// Byte by byte delivery must give the same result.
			r := NewReader(iotest.OneByteReader(strings.NewReader(tt.in)), Config{})
			var got2 [][]string
			for {
				args, err := r.ReadCommand()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatalf("one byte reader: %v", err)
				}
				got2 = append(got2, strs(args))
			}
			if !reflect.DeepEqual(got2, tt.want) {
				t.Fatalf("one byte reader: got %q, want %q", got2, tt.want)
			}
		})
	}
}

// TestReaderErrors: texts captured from redis-server 7.0.15.
func TestReaderErrors(t *testing.T) {
	small := Config{MaxArgs: 3, MaxBulkBytes: 10, MaxInlineBytes: 32, MaxCommandBytes: 15}
	tests := []struct {
		name string
		in   string
		cfg  Config
		want string
	}{
		{"bad count", "*x\r\n", Config{}, MsgInvalidMultibulk},
		{"count overflow", "*99999999999999999999999\r\n", Config{}, MsgInvalidMultibulk},
		{"too many args", "*4\r\n", small, MsgInvalidMultibulk},
		{"not a bulk", "*2\r\n+foo\r\n", Config{}, "ERR Protocol error: expected '$', got '+'"},
		{"bad bulk length", "*1\r\n$x\r\n", Config{}, MsgInvalidBulk},
		{"negative bulk", "*1\r\n$-1\r\n", Config{}, MsgInvalidBulk},
		{"bulk too long", "*1\r\n$11\r\n", small, MsgInvalidBulk},
		{"command too long", "*2\r\n$8\r\naaaaaaaa\r\n$8\r\n", small, MsgTooBigRequest},
		{"missing CRLF", "*1\r\n$1\r\nab\r\n", Config{}, MsgExpectedCRLF},
		{"inline too long", strings.Repeat("x", 40), small, MsgTooBigInline},
		{"inline too long with newline", strings.Repeat("x", 40) + "\r\n", small, MsgTooBigInline},
		{"count line too long", "*1" + strings.Repeat("1", 40), small, MsgTooBigMbulkCount},
		{"bulk line too long", "*1\r\n$" + strings.Repeat("1", 40), small, MsgTooBigBulkCount},
		{"unbalanced double", "PING \"abc\r\n", Config{}, MsgUnbalancedQuotes},
		{"unbalanced single", "PING 'abc\r\n", Config{}, MsgUnbalancedQuotes},
		{"quote then char", "PING \"a\"b\r\n", Config{}, MsgUnbalancedQuotes},
		{"inline too many args", "a b c d\r\n", small, MsgInvalidMultibulk},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.cfg
			if cfg.BufferSize == 0 {
				cfg.BufferSize = 16
			}
			_, err := readAll(tt.in, cfg)
			var pe *ProtocolError
			if !errors.As(err, &pe) {
				t.Fatalf("got %v, want protocol error %q", err, tt.want)
			}
			if pe.Msg != tt.want {
				t.Fatalf("got %q, want %q", pe.Msg, tt.want)
			}
		})
	}
}

func TestReaderTruncated(t *testing.T) {
	for _, in := range []string{"*2\r\n", "*2\r\n$3\r\nGE", "*1\r\n$3\r\nGET", "*1\r\n$3\r\nGET\r", "PING"} {
		_, err := readAll(in, Config{})
		if err != io.ErrUnexpectedEOF {
			t.Errorf("%q: got %v, want unexpected EOF", in, err)
		}
	}
}

// TestReaderAliasing documents that args are reused and CloneArgs copies.
func TestReaderAliasing(t *testing.T) {
	r := NewReader(strings.NewReader("*1\r\n$3\r\naaa\r\n*1\r\n$3\r\nbbb\r\n"), Config{})
	a, _ := r.ReadCommand()
	kept := CloneArgs(a)
	if _, err := r.ReadCommand(); err != nil {
		t.Fatal(err)
	}
	if string(kept[0]) != "aaa" {
		t.Fatalf("clone changed: %q", kept[0])
	}
}

func TestReaderLargeBulk(t *testing.T) {
	big := bytes.Repeat([]byte("z"), 300<<10)
	var buf bytes.Buffer
	w := NewWriter(&buf, 0)
	w.WriteCommand([][]byte{[]byte("SET"), []byte("k"), big})
	w.Flush()
	r := NewReader(&buf, Config{})
	args, err := r.ReadCommand()
	if err != nil || !bytes.Equal(args[2], big) {
		t.Fatalf("large bulk: %v", err)
	}
}

func TestWriterReplies(t *testing.T) {
	arr := reply.NewArray(reply.NewInt(1), reply.NewBulk("a"), reply.Null, reply.NewArray())
	tests := []struct {
		name  string
		r     reply.Reply
		resp2 string
		resp3 string
	}{
		{"status", reply.OK, "+OK\r\n", "+OK\r\n"},
		{"error", reply.NewError("ERR bad\r\nthing"), "-ERR bad  thing\r\n", "-ERR bad  thing\r\n"},
		{"int", reply.NewInt(-42), ":-42\r\n", ":-42\r\n"},
		{"bulk", reply.NewBulk("hi"), "$2\r\nhi\r\n", "$2\r\nhi\r\n"},
		{"nil", reply.Null, "$-1\r\n", "_\r\n"},
		{"nil array", reply.Reply{Kind: reply.NilArray}, "*-1\r\n", "_\r\n"},
		{"double", reply.NewDouble(1.5), "$3\r\n1.5\r\n", ",1.5\r\n"},
		{"inf", reply.Reply{Kind: reply.Double, Str: "+Inf"}, "$3\r\ninf\r\n", ",inf\r\n"},
		{"bool", reply.Reply{Kind: reply.Bool, Int: 1}, ":1\r\n", "#t\r\n"},
		{"bool false", reply.Reply{Kind: reply.Bool}, ":0\r\n", "#f\r\n"},
		{"big number", reply.Reply{Kind: reply.BigNumber, Str: "12345678901234567890"}, "$20\r\n12345678901234567890\r\n", "(12345678901234567890\r\n"},
		{"verbatim", reply.Reply{Kind: reply.Verbatim, Str: "txt:abc"}, "$3\r\nabc\r\n", "=7\r\ntxt:abc\r\n"},
		{"verbatim, no format", reply.Reply{Kind: reply.Verbatim, Str: "ab"}, "$0\r\n\r\n", "$0\r\n\r\n"},
		{"array", arr, "*4\r\n:1\r\n$1\r\na\r\n$-1\r\n*0\r\n", "*4\r\n:1\r\n$1\r\na\r\n_\r\n*0\r\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for proto, want := range map[int]string{2: tt.resp2, 3: tt.resp3} {
				var buf bytes.Buffer
				w := NewWriter(&buf, 0)
				w.Proto = proto
				w.WriteReply(tt.r)
				w.Flush()
				if buf.String() != want {
					t.Errorf("RESP%d: got %q, want %q", proto, buf.String(), want)
				}
			}
		})
	}
}

func TestWriterAggregates(t *testing.T) {
	for proto, want := range map[int]string{
		2: "*2\r\n$1\r\nk\r\n:1\r\n*1\r\n:0\r\n*2\r\n$7\r\nmessage\r\n$1\r\nm\r\n",
		3: "%1\r\n$1\r\nk\r\n#t\r\n~1\r\n#f\r\n>2\r\n$7\r\nmessage\r\n$1\r\nm\r\n",
	} {
		var buf bytes.Buffer
		w := NewWriter(&buf, 0)
		w.Proto = proto
		w.WriteMapLen(1)
		w.WriteBulkString("k")
		w.WriteBool(true)
		w.WriteSetLen(1)
		w.WriteBool(false)
		w.WritePushLen(2)
		w.WriteBulkString("message")
		w.WriteBulkString("m")
		w.Flush()
		if buf.String() != want {
			t.Errorf("RESP%d: got %q, want %q", proto, buf.String(), want)
		}
		// The client-side reader parses what the writer wrote.
		br := bufio.NewReader(&buf)
		for i := 0; i < 3; i++ {
			if _, err := ReadValue(br); err != nil {
				t.Fatalf("RESP%d: ReadValue: %v", proto, err)
			}
		}
	}
}

func BenchmarkReadCommand(b *testing.B) {
	var buf bytes.Buffer
	w := NewWriter(&buf, 0)
	for i := 0; i < 1000; i++ {
		w.WriteCommand([][]byte{[]byte("SET"), []byte("lock:resource"), []byte("0123456789abcdef"), []byte("NX"), []byte("PX"), []byte("30000")})
	}
	w.Flush()
	data := buf.Bytes()
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for i := 0; i < b.N; i++ {
		r := NewReader(bytes.NewReader(data), Config{})
		for {
			if _, err := r.ReadCommand(); err != nil {
				break
			}
		}
	}
}

func BenchmarkWriteReply(b *testing.B) {
	w := NewWriter(io.Discard, 0)
	rep := reply.NewArray(reply.NewBulk("value"), reply.NewInt(12345), reply.Null)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		w.WriteReply(rep)
	}
}
