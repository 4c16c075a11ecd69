package fsm

import (
	"encoding/binary"
	"testing"
)

func TestDecoder(t *testing.T) {
	msg := []byte{7}
	msg = binary.AppendUvarint(msg, 300)
	msg = binary.AppendVarint(msg, -5)
	msg = appendResultStr(msg, "node-a")
	msg = appendResultStr(msg, "")
	read := func(d *Decoder) (byte, uint64, int64, string, []byte) {
		return d.Byte(), d.Uvarint(), d.Varint(), d.Str(), d.Bytes()
	}
	d := NewDecoder(msg)
	c, u, v, s, b := read(d)
	if d.Err() != nil || c != 7 || u != 300 || v != -5 || s != "node-a" || len(b) != 0 || d.Len() != 0 {
		t.Fatalf("read %d %d %d %q %q, err %v, %d left", c, u, v, s, b, d.Err(), d.Len())
	}
	cases := []struct {
		name string
		b    []byte
	}{
		{"empty", nil},
		{"bad varint", []byte{7, 0x80, 0x80}},
		{"string past the end", []byte{7, 1, 1, 9, 'x'}},
	}
	for i := 1; i < len(msg); i++ {
		cases = append(cases, struct {
			name string
			b    []byte
		}{"truncated", msg[:i]})
	}
	for _, c := range cases {
		d := NewDecoder(c.b)
		read(d)
		if d.Err() == nil {
			t.Errorf("%s (%x): no error", c.name, c.b)
		}
		// The first error sticks and later reads are zero.
		if d.Byte() != 0 || d.Uvarint() != 0 || d.Str() != "" || d.Err() == nil {
			t.Errorf("%s: reads after an error", c.name)
		}
	}
}
