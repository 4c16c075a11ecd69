package fsm

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/locknode/locknode/fsm/reply"
)

var resultCodecCases = []struct {
	name string
	r    Result
	// golden is the encoding nodes of earlier releases produce and
	// expect: forwarding between mixed versions depends on it.
	golden string
}{
	{"empty", Result{}, "0000000000"},
	{"granted", Result{Index: 7, Granted: true, Fence: 7, Deadline: 1700000000000, Count: 2, Now: 1699999990000},
		"21070780a0abfef96204e083aafef962"},
	{"queued", Result{Index: 9, Queued: true, Deadline: -5}, "0209000900"},
	{"released", Result{Index: 1 << 40, Released: true}, "04808080808020000000"},
	{"refused", Result{Index: 3, Err: fmt.Errorf("%w: \"k\"", ErrLocked)},
		"0803000000021f66736d3a2068656c6420627920616e6f74686572206f776e65723a20226b22"},
	{"unknown error", Result{Index: 3, Err: errors.New("something else")},
		"0803000000ff0e736f6d657468696e6720656c7365"},
	{"reply", Result{Index: 4, Now: 5, Reply: reply.NewArray(reply.NewBulk("a"), reply.NewInt(-3), reply.Null,
		reply.NewArray(), reply.NewError("ERR x"), reply.NewStatus("OK"), reply.NewDouble(1.5), reply.Reply{Kind: reply.NilArray},
		reply.Reply{Kind: reply.Map, Arr: []reply.Reply{reply.NewBulk("k"), reply.NewInt(1)}},
		reply.Reply{Kind: reply.Set, Arr: []reply.Reply{reply.NewBulk("m")}},
		reply.Reply{Kind: reply.Pairs, Arr: []reply.Reply{reply.NewBulk("f"), reply.NewBulk("v")}})},
		"30040000000a050b04016103050005000205455252207801024f4b0703312e3506080204016b0302090104016d0a02040166040176"},
	{"script replies", Result{Index: 5, Reply: reply.NewArray(reply.Reply{Kind: reply.Bool, Int: 1},
		reply.Reply{Kind: reply.BigNumber, Str: "123"}, reply.Reply{Kind: reply.Verbatim, Str: "txt:x"},
		reply.Reply{Kind: reply.Map, Arr: []reply.Reply{reply.NewBulk("k"), reply.Reply{Kind: reply.Bool}}})},
		"100500000005040b020c033132330d057478743a78080204016b0b00"},
}

func TestResultCodecRoundTrip(t *testing.T) {
	for _, c := range resultCodecCases {
		t.Run(c.name, func(t *testing.T) {
			b := AppendResult(nil, &c.r)
			got, err := DecodeResult(b)
			if err != nil {
				t.Fatal(err)
			}
			if (got.Err == nil) != (c.r.Err == nil) {
				t.Fatalf("err %v, want %v", got.Err, c.r.Err)
			}
			if c.r.Err != nil {
				if got.Err.Error() != c.r.Err.Error() {
					t.Fatalf("err text %q, want %q", got.Err, c.r.Err)
				}
				for _, s := range errCodes {
					if errors.Is(c.r.Err, s) != errors.Is(got.Err, s) {
						t.Fatalf("errors.Is(%v) differs for %v", got.Err, s)
					}
				}
			}
			got.Err, c.r.Err = nil, nil
			if !reflect.DeepEqual(got, c.r) {
				t.Fatalf("got %+v\nwant %+v", got, c.r)
			}
		})
	}
}

// The bytes are a wire format between nodes of different releases.
func TestResultCodecGolden(t *testing.T) {
	for _, c := range resultCodecCases {
		t.Run(c.name, func(t *testing.T) {
			want, err := hex.DecodeString(c.golden)
			if err != nil {
				t.Fatal(err)
			}
			if got := AppendResult(nil, &c.r); !bytes.Equal(got, want) {
				t.Fatalf("encoding changed:\ngot  %x\nwant %x", got, want)
			}
			// Appending keeps what b already holds.
			if got := AppendResult([]byte{0xEE}, &c.r); !bytes.Equal(got, append([]byte{0xEE}, want...)) {
				t.Fatalf("append over a prefix: %x", got)
			}
		})
	}
}

// Every refusal the FSM can give reaches the receiver with its sentinel.
func TestResultCodecRefusals(t *testing.T) {
	for _, s := range errCodes {
		t.Run(s.Error(), func(t *testing.T) {
			in := Result{Index: 1, Err: fmt.Errorf("%w: detail", s)}
			got, err := DecodeResult(AppendResult(nil, &in))
			if err != nil {
				t.Fatal(err)
			}
			if !errors.Is(got.Err, s) || got.Err.Error() != in.Err.Error() {
				t.Fatalf("got %v, want %v wrapping %v", got.Err, in.Err, s)
			}
			for _, other := range errCodes {
				if other != s && errors.Is(got.Err, other) {
					t.Fatalf("%v also matches %v", got.Err, other)
				}
			}
		})
	}
}

func TestResultCodecRefusesBadInput(t *testing.T) {
	type input struct {
		name string
		b    []byte
	}
	deep := reply.NewArray()
	for i := 0; i < maxReplyDepth+2; i++ {
		deep = reply.NewArray(deep)
	}
	bad := []input{
		{"nested too deep", AppendResult(nil, &Result{Reply: deep})},
		{"unknown reply kind", []byte{rReply, 0, 0, 0, 0, 0xFE}},
		{"array longer than input", []byte{rReply, 0, 0, 0, 0, byte(reply.Array), 0x80, 0x80, 0x80, 0x80, 0x08}},
		{"string longer than input", []byte{rReply, 0, 0, 0, 0, byte(reply.Bulk), 5, 'a'}},
	}
	for _, c := range resultCodecCases {
		b := AppendResult(nil, &c.r)
		for i := 0; i < len(b); i++ {
			bad = append(bad, input{fmt.Sprintf("%s truncated to %d", c.name, i), b[:i]})
		}
		bad = append(bad, input{c.name + " trailing byte", append(b, 0)})
	}
	for _, c := range bad {
		if r, err := DecodeResult(c.b); err == nil {
			t.Errorf("%s: decoded %+v", c.name, r)
		} else if !errors.Is(err, errBadResult) {
			t.Errorf("%s: %v does not wrap errBadResult", c.name, err)
		}
	}
}
