package resp

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// Config bounds what one command may be. Zero fields take the defaults.
type Config struct {
	// MaxArgs is the most arguments (command name included) one command
	// may have. Default 1 Mi, Redis' own limit for a multibulk request.
	MaxArgs int
	// MaxBulkBytes is the longest single argument. Default 16 MiB: values
	// the FSM accepts are far smaller (1 MiB), scripts smaller still.
	MaxBulkBytes int
	// MaxInlineBytes is the longest inline command line, and the longest
	// "*<n>" / "$<n>" header line. Default 64 KiB, as in Redis.
	MaxInlineBytes int
	// MaxCommandBytes bounds the sum of a command's argument lengths.
	// Default 64 MiB.
	MaxCommandBytes int
	// BufferSize is the read buffer per connection. Default 16 KiB.
	BufferSize int
}

// Defaults.
const (
	DefaultMaxArgs         = 1 << 20
	DefaultMaxBulkBytes    = 16 << 20
	DefaultMaxInlineBytes  = 64 << 10
	DefaultMaxCommandBytes = 64 << 20
	DefaultBufferSize      = 16 << 10
)

// DefaultConfig returns the documented defaults.
func DefaultConfig() Config {
	return Config{
		MaxArgs:         DefaultMaxArgs,
		MaxBulkBytes:    DefaultMaxBulkBytes,
		MaxInlineBytes:  DefaultMaxInlineBytes,
		MaxCommandBytes: DefaultMaxCommandBytes,
		BufferSize:      DefaultBufferSize,
	}
}

// Validate reports a Config that cannot work (negative limits).
func (c Config) Validate() error {
	if c.MaxArgs < 0 || c.MaxBulkBytes < 0 || c.MaxInlineBytes < 0 || c.MaxCommandBytes < 0 || c.BufferSize < 0 {
		return errors.New("resp: config: limits must not be negative")
	}
	return nil
}

func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.MaxArgs == 0 {
		c.MaxArgs = d.MaxArgs
	}
	if c.MaxBulkBytes == 0 {
		c.MaxBulkBytes = d.MaxBulkBytes
	}
	if c.MaxInlineBytes == 0 {
		c.MaxInlineBytes = d.MaxInlineBytes
	}
	if c.MaxCommandBytes == 0 {
		c.MaxCommandBytes = d.MaxCommandBytes
	}
	if c.BufferSize == 0 {
		c.BufferSize = d.BufferSize
	}
	if c.BufferSize < 16 {
		c.BufferSize = 16
	}
	return c
}

// ProtocolError is malformed input. Its Error text is the reply Redis
// sends for the same input (without the leading '-'); the connection
// cannot be resynchronised after it and should be closed.
type ProtocolError struct{ Msg string }

func (e *ProtocolError) Error() string { return e.Msg }

// Protocol error texts, as Redis 7 words them.
const (
	MsgInvalidMultibulk  = "ERR Protocol error: invalid multibulk length"
	MsgInvalidBulk       = "ERR Protocol error: invalid bulk length"
	MsgTooBigInline      = "ERR Protocol error: too big inline request"
	MsgTooBigMbulkCount  = "ERR Protocol error: too big mbulk count string"
	MsgTooBigBulkCount   = "ERR Protocol error: too big bulk count string"
	MsgUnbalancedQuotes  = "ERR Protocol error: unbalanced quotes in request"
	MsgExpectedCRLF      = "ERR Protocol error: expected CRLF after bulk string"
	MsgTooBigRequest     = "ERR Protocol error: request exceeds the maximum command size"
	msgExpectedDollarFmt = "ERR Protocol error: expected '$', got '%c'"
)

func protoErr(msg string) error { return &ProtocolError{Msg: msg} }

// Reader parses client commands from a stream. It is not safe for
// concurrent use.
type Reader struct {
	br   *bufio.Reader
	cfg  Config
	args [][]byte // reused: ReadCommand's result
	buf  []byte   // reused: argument bytes
	line []byte   // reused: long header/inline lines
	offs []int    // reused: argument end offsets into buf
}

// NewReader returns a Reader over r with cfg's limits.
func NewReader(r io.Reader, cfg Config) *Reader {
	cfg = cfg.withDefaults()
	return &Reader{br: bufio.NewReaderSize(r, cfg.BufferSize), cfg: cfg}
}

// Buffered returns how many input bytes are already read and waiting: a
// server flushes its replies when it reaches 0 (end of a pipeline batch).
func (r *Reader) Buffered() int { return r.br.Buffered() }

// WaitInput blocks until input is available or reading fails, without
// consuming anything. A server uses it, from another goroutine, to notice
// that a client hung up while its command blocks; it must not run
// concurrently with ReadCommand.
func (r *Reader) WaitInput() error {
	_, err := r.br.Peek(1)
	return err
}

// ReadCommand returns the next command's arguments; args[0] is the command
// name. Empty commands ("*0", "*-1", blank inline lines) are skipped. The
// slices alias the Reader's buffers and stay valid until the next call.
// Errors: io.EOF at a clean end of input, io.ErrUnexpectedEOF inside a
// command, *ProtocolError for malformed or oversized input, or the
// underlying read error.
func (r *Reader) ReadCommand() ([][]byte, error) {
	if r.br.Buffered() == 0 {
		// About to wait for the client: a large command's buffers go
		// now, so an idle connection holds no more than a normal one.
		// A pipeline (input waiting) keeps them for the next command.
		r.shrink()
	}
	for {
		b, err := r.br.Peek(1)
		if err != nil {
			return nil, err
		}
		var args [][]byte
		if b[0] == '*' {
			args, err = r.readMultibulk()
		} else {
			args, err = r.readInline()
		}
		if err != nil {
			return nil, err
		}
		if len(args) > 0 {
			return args, nil
		}
	}
}

// What an idle Reader keeps of the buffers a command grew; larger ones
// are dropped before it waits for input.
const (
	keepBufBytes  = 64 << 10
	keepArgs      = 1024
	keepLineBytes = 4 << 10
)

func (r *Reader) shrink() {
	if cap(r.buf) > keepBufBytes {
		r.buf = nil
		// The argument slices point into the old buffer, also past
		// their length: they would keep it alive.
		clear(r.args[:cap(r.args)])
	}
	if cap(r.args) > keepArgs {
		r.args = nil
	}
	if cap(r.offs) > keepArgs {
		r.offs = nil
	}
	if cap(r.line) > keepLineBytes {
		r.line = nil
	}
}

// Size returns the size of the read buffer (fixed: Config.BufferSize).
func (r *Reader) Size() int { return r.br.Size() }

// ArgsMemory returns the bytes held by the buffers that commands' arguments
// grew; before it waits for input the Reader drops those larger than a
// normal command needs, so a connection that sent one huge command does
// not keep its size while idle.
func (r *Reader) ArgsMemory() int {
	return cap(r.buf) + cap(r.line) + 24*cap(r.args) + 8*cap(r.offs)
}

// readLine returns the next line without its "\n" (and "\r" before it).
// The result may alias bufio's buffer: use it before the next read. A
// line longer than MaxInlineBytes fails as soon as that many bytes have
// arrived without a newline, without waiting for more.
func (r *Reader) readLine(tooLong string) ([]byte, error) {
	r.line = r.line[:0]
	for {
		if _, err := r.br.Peek(1); err != nil { // waits for input
			if err == io.EOF && len(r.line) > 0 {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
		buf, _ := r.br.Peek(r.br.Buffered())
		i := bytes.IndexByte(buf, '\n')
		if i < 0 {
			r.line = append(r.line, buf...)
			_, _ = r.br.Discard(len(buf))
			if len(r.line) > r.cfg.MaxInlineBytes {
				return nil, protoErr(tooLong)
			}
			continue
		}
		line := buf[:i+1]
		if len(r.line) > 0 {
			r.line = append(r.line, line...)
			line = r.line
		}
		if len(line) > r.cfg.MaxInlineBytes+2 {
			return nil, protoErr(tooLong)
		}
		// Discard only advances bufio's read position: line stays valid
		// until the next read fills the buffer.
		_, _ = r.br.Discard(i + 1)
		line = line[:len(line)-1]
		if n := len(line); n > 0 && line[n-1] == '\r' {
			line = line[:n-1]
		}
		return line, nil
	}
}

// parseLen parses a decimal length as Redis' string2ll does: optional '-',
// digits only, no leading '+', no spaces, no overflow.
func parseLen(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	neg := false
	if b[0] == '-' {
		neg = true
		b = b[1:]
		if len(b) == 0 {
			return 0, false
		}
	}
	if len(b) > 1 && b[0] == '0' {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := int64(c - '0')
		if n > (1<<63-1-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	if neg {
		n = -n
	}
	return n, true
}

func (r *Reader) readMultibulk() ([][]byte, error) {
	line, err := r.readLine(MsgTooBigMbulkCount)
	if err != nil {
		return nil, eofInCommand(err)
	}
	n, ok := parseLen(line[1:])
	if !ok || n > int64(r.cfg.MaxArgs) {
		return nil, protoErr(MsgInvalidMultibulk)
	}
	if n <= 0 {
		return nil, nil // Redis ignores empty and null multibulks
	}
	r.buf = r.buf[:0]
	r.offs = r.offs[:0]
	total := 0
	for i := int64(0); i < n; i++ {
		line, err := r.readLine(MsgTooBigBulkCount)
		if err != nil {
			return nil, eofInCommand(err)
		}
		if len(line) == 0 || line[0] != '$' {
			c := byte('\n')
			if len(line) > 0 {
				c = line[0]
			}
			return nil, protoErr(fmt.Sprintf(msgExpectedDollarFmt, c))
		}
		size, ok := parseLen(line[1:])
		if !ok || size < 0 || size > int64(r.cfg.MaxBulkBytes) {
			return nil, protoErr(MsgInvalidBulk)
		}
		total += int(size)
		if total > r.cfg.MaxCommandBytes {
			return nil, protoErr(MsgTooBigRequest)
		}
		if err := r.readBulk(int(size)); err != nil {
			return nil, err
		}
		r.offs = append(r.offs, len(r.buf))
	}
	return r.slice(), nil
}

// readBulk appends size bytes and checks the CRLF after them. The buffer
// grows with the bytes received, never by the declared size alone, so a
// lying header costs nothing.
func (r *Reader) readBulk(size int) error {
	const chunk = 64 << 10
	for size > 0 {
		n := min(size, chunk)
		start := len(r.buf)
		r.buf = grow(r.buf, n)
		if _, err := io.ReadFull(r.br, r.buf[start:start+n]); err != nil {
			return eofInCommand(err)
		}
		size -= n
	}
	crlf, err := r.br.Peek(2)
	if err != nil {
		return eofInCommand(err)
	}
	if crlf[0] != '\r' || crlf[1] != '\n' {
		return protoErr(MsgExpectedCRLF)
	}
	_, _ = r.br.Discard(2)
	return nil
}

func grow(b []byte, n int) []byte {
	if cap(b)-len(b) < n {
		nb := make([]byte, len(b), 2*cap(b)+n)
		copy(nb, b)
		b = nb
	}
	return b[:len(b)+n]
}

// slice builds r.args from r.buf and r.offs.
func (r *Reader) slice() [][]byte {
	r.args = r.args[:0]
	prev := 0
	for _, end := range r.offs {
		r.args = append(r.args, r.buf[prev:end:end])
		prev = end
	}
	return r.args
}

func eofInCommand(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

func (r *Reader) readInline() ([][]byte, error) {
	line, err := r.readLine(MsgTooBigInline)
	if err != nil {
		return nil, err
	}
	r.buf = r.buf[:0]
	r.offs = r.offs[:0]
	if err := r.splitArgs(line); err != nil {
		return nil, err
	}
	if len(r.offs) > r.cfg.MaxArgs {
		return nil, protoErr(MsgInvalidMultibulk)
	}
	return r.slice(), nil
}

// splitArgs splits an inline line like Redis' sdssplitargs: arguments are
// separated by spaces; "double quotes" take \n \r \t \b \a \\ \" and \xHH
// escapes; 'single quotes' take \' only; a closing quote must be followed
// by a space or the end of the line.
func (r *Reader) splitArgs(line []byte) error {
	i := 0
	for {
		for i < len(line) && isSpace(line[i]) {
			i++
		}
		if i >= len(line) {
			return nil
		}
		inDQ, inSQ, done := false, false, false
		for !done {
			if inDQ {
				if i >= len(line) {
					return protoErr(MsgUnbalancedQuotes)
				}
				c := line[i]
				switch {
				case c == '\\' && i+3 < len(line) && line[i+1] == 'x' && isHex(line[i+2]) && isHex(line[i+3]):
					r.buf = append(r.buf, unhex(line[i+2])<<4|unhex(line[i+3]))
					i += 3
				case c == '\\' && i+1 < len(line):
					i++
					switch e := line[i]; e {
					case 'n':
						r.buf = append(r.buf, '\n')
					case 'r':
						r.buf = append(r.buf, '\r')
					case 't':
						r.buf = append(r.buf, '\t')
					case 'b':
						r.buf = append(r.buf, '\b')
					case 'a':
						r.buf = append(r.buf, '\a')
					default:
						r.buf = append(r.buf, e)
					}
				case c == '"':
					if i+1 < len(line) && !isSpace(line[i+1]) {
						return protoErr(MsgUnbalancedQuotes)
					}
					done = true
				default:
					r.buf = append(r.buf, c)
				}
			} else if inSQ {
				if i >= len(line) {
					return protoErr(MsgUnbalancedQuotes)
				}
				c := line[i]
				switch {
				case c == '\\' && i+1 < len(line) && line[i+1] == '\'':
					i++
					r.buf = append(r.buf, '\'')
				case c == '\'':
					if i+1 < len(line) && !isSpace(line[i+1]) {
						return protoErr(MsgUnbalancedQuotes)
					}
					done = true
				default:
					r.buf = append(r.buf, c)
				}
			} else {
				if i >= len(line) {
					break
				}
				switch c := line[i]; {
				case isSpace(c):
					done = true
				case c == '"':
					inDQ = true
				case c == '\'':
					inSQ = true
				default:
					r.buf = append(r.buf, c)
				}
			}
			if i < len(line) {
				i++
			}
		}
		r.offs = append(r.offs, len(r.buf))
		if len(r.buf) > r.cfg.MaxCommandBytes {
			return protoErr(MsgTooBigRequest)
		}
	}
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\n' || c == '\r' || c == '\t' || c == '\v' || c == '\f'
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

func unhex(c byte) byte {
	switch {
	case c >= '0' && c <= '9':
		return c - '0'
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}

// CloneArgs copies args into memory the caller owns (two allocations).
func CloneArgs(args [][]byte) [][]byte {
	n := 0
	for _, a := range args {
		n += len(a)
	}
	data := make([]byte, 0, n)
	out := make([][]byte, len(args))
	for i, a := range args {
		start := len(data)
		data = append(data, a...)
		out[i] = data[start:len(data):len(data)]
	}
	return out
}
