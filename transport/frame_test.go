package transport

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"
)

func TestFrameRoundTrip(t *testing.T) {
	big := bytes.Repeat([]byte{0xAB}, 300<<10) // crosses readBody's chunked path
	tests := []struct {
		name string
		f    frame
	}{
		{"empty request", frame{kind: kindRequest, id: 1}},
		{"cancel", frame{kind: kindCancel, id: 1<<64 - 1}},
		{"response", frame{kind: kindResponse, id: 42, body: []byte("hello")}},
		{"error", frame{kind: kindError, id: 7, body: []byte("boom")}},
		{"large body", frame{kind: kindRequest, id: 9, body: big}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			enc := appendFrame(nil, tc.f.kind, tc.f.id, tc.f.body)
			var hdr [frameHeader]byte
			r := bytes.NewReader(enc)
			got, err := readFrame(r, &hdr, MaxFrameSize)
			if err != nil {
				t.Fatal(err)
			}
			if got.kind != tc.f.kind || got.id != tc.f.id || !bytes.Equal(got.body, tc.f.body) {
				t.Fatalf("got %v/%d/%d bytes, want %v/%d/%d bytes", got.kind, got.id, len(got.body), tc.f.kind, tc.f.id, len(tc.f.body))
			}
			if _, err := readFrame(r, &hdr, MaxFrameSize); err != io.EOF {
				t.Fatalf("after the frame: err %v, want io.EOF", err)
			}
		})
	}
}

func TestFrameRejects(t *testing.T) {
	hdr := func(n uint32, kind byte) []byte {
		b := binary.BigEndian.AppendUint32(nil, n)
		b = append(b, kind)
		return binary.BigEndian.AppendUint64(b, 1)
	}
	tests := []struct {
		name     string
		in       []byte
		protocol bool // ErrProtocol expected (else a short read)
	}{
		{"length below header", hdr(8, byte(kindRequest)), true},
		{"zero length", hdr(0, byte(kindRequest)), true},
		{"huge length", hdr(0xFFFFFFFF, byte(kindRequest)), true},
		{"just over limit", hdr(9+MaxFrameSize+1, byte(kindRequest)), true},
		{"unknown kind", hdr(9, 0), true},
		{"kind too big", hdr(9, 5), true},
		{"truncated header", hdr(9, byte(kindRequest))[:7], false},
		{"truncated small body", append(hdr(9+10, byte(kindRequest)), "abc"...), false},
		{"truncated large body, lying length", append(hdr(9+MaxFrameSize, byte(kindRequest)), "abc"...), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var h [frameHeader]byte
			_, err := readFrame(bytes.NewReader(tc.in), &h, MaxFrameSize)
			if err == nil {
				t.Fatal("accepted a bad frame")
			}
			if got := errors.Is(err, ErrProtocol); got != tc.protocol {
				t.Fatalf("err %v: ErrProtocol=%v, want %v", err, got, tc.protocol)
			}
			if !tc.protocol && !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("err %v, want io.ErrUnexpectedEOF", err)
			}
		})
	}
}

// FuzzReadFrame feeds arbitrary bytes to the decoder: it must never panic,
// never return a body over the limit, and every frame it accepts must
// re-encode to the bytes it consumed.
func FuzzReadFrame(f *testing.F) {
	f.Add(appendFrame(nil, kindRequest, 1, []byte("x")))
	f.Add(appendFrame(appendFrame(nil, kindResponse, 2, nil), kindError, 3, []byte("e")))
	f.Add([]byte{0xFF, 0xFF, 0xFF, 0xFF, 1, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Add([]byte{0, 0, 0, 9, 9, 0, 0, 0, 0, 0, 0, 0, 1})
	f.Add([]byte{})
	const limit = 1 << 10
	f.Fuzz(func(t *testing.T, in []byte) {
		r := bytes.NewReader(in)
		var hdr [frameHeader]byte
		consumed := 0
		for {
			fr, err := readFrame(r, &hdr, limit)
			if err != nil {
				return
			}
			if len(fr.body) > limit {
				t.Fatalf("body of %d bytes over the limit %d", len(fr.body), limit)
			}
			enc := appendFrame(nil, fr.kind, fr.id, fr.body)
			if !bytes.Equal(enc, in[consumed:consumed+len(enc)]) {
				t.Fatalf("frame does not re-encode to its input")
			}
			consumed += len(enc)
		}
	})
}
