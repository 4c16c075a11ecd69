package resp

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// Value is one parsed reply, as a client sees it. ReadValue is the client
// side of the codec, for tests and tools; servers use Reader.
type Value struct {
	Type  byte    // '+', '-', ':', '$', '*', '%', '~', '>', '_', ',', '#'
	Str   string  // + - $ , and # ("t"/"f")
	Int   int64   // :
	Null  bool    // $-1, *-1 and _
	Elems []Value // * ~ > and % (keys and values interleaved)
}

// String renders v compactly for test failure messages.
func (v Value) String() string {
	switch {
	case v.Null:
		return "(nil)"
	case v.Type == ':':
		return strconv.FormatInt(v.Int, 10)
	case v.Type == '-':
		return "(error " + v.Str + ")"
	case len(v.Elems) > 0 || v.Type == '*' || v.Type == '%' || v.Type == '~' || v.Type == '>':
		return fmt.Sprintf("%c%v", v.Type, v.Elems)
	}
	return strconv.Quote(v.Str)
}

var errBadReply = errors.New("resp: malformed reply")

// maxValueLen bounds lengths ReadValue accepts.
const maxValueLen = 512 << 20

// ReadValue reads one reply from br.
func ReadValue(br *bufio.Reader) (Value, error) {
	line, err := br.ReadString('\n')
	if err != nil {
		return Value{}, err
	}
	if len(line) < 3 || line[len(line)-2] != '\r' {
		return Value{}, errBadReply
	}
	t, body := line[0], line[1:len(line)-2]
	v := Value{Type: t}
	switch t {
	case '+', '-', ',':
		v.Str = body
	case '#':
		v.Str = body
	case '_':
		v.Null = true
	case ':':
		if v.Int, err = strconv.ParseInt(body, 10, 64); err != nil {
			return v, errBadReply
		}
	case '$':
		n, err := strconv.Atoi(body)
		if err != nil || n < -1 || n > maxValueLen {
			return v, errBadReply
		}
		if n == -1 {
			v.Null = true
			return v, nil
		}
		b := make([]byte, n+2)
		if _, err := io.ReadFull(br, b); err != nil {
			return v, err
		}
		v.Str = string(b[:n])
	case '*', '~', '>', '%':
		n, err := strconv.Atoi(body)
		if err != nil || n < -1 || n > maxValueLen {
			return v, errBadReply
		}
		if n == -1 {
			v.Null = true
			return v, nil
		}
		if t == '%' {
			n *= 2
		}
		v.Elems = make([]Value, 0, min(n, 1024))
		for i := 0; i < n; i++ {
			e, err := ReadValue(br)
			if err != nil {
				return v, err
			}
			v.Elems = append(v.Elems, e)
		}
	default:
		return v, errBadReply
	}
	return v, nil
}
