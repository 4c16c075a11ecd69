package wire_test

import (
	"bytes"
	"encoding/json"
	"io"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/wire"
)

// codecTypes are the types AppendJSON and DecodeJSON handle; each entry
// makes a fresh pointer of its type.
var codecTypes = []func() any{
	func() any { return new(api.Lease) },
	func() any { return new(api.ReleaseResult) },
	func() any { return new(api.ErrorBody) },
	func() any { return new(api.AcquireRequest) },
	func() any { return new(api.ReleaseRequest) },
	func() any { return new(api.ExtendRequest) },
}

// strictDecode is what the server did before the fast path: one document,
// unknown fields refused, nothing but whitespace after it.
func strictDecode(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return io.ErrUnexpectedEOF // any error: trailing data
	}
	return nil
}

// randString draws from an alphabet with characters encoding/json
// escapes, so both paths of AppendJSON and DecodeJSON are taken.
func randString(r *rand.Rand) string {
	const plain = "abcXYZ019-_:./ "
	const special = "\"\\<>&\n\té\u2028\x00\x7f"
	n := r.IntN(12)
	var b strings.Builder
	for range n {
		if r.IntN(10) == 0 {
			s := []rune(special)
			b.WriteRune(s[r.IntN(len(s))])
		} else {
			b.WriteByte(plain[r.IntN(len(plain))])
		}
	}
	if r.IntN(50) == 0 {
		b.WriteByte(0xff) // invalid UTF-8
	}
	return b.String()
}

func randInt(r *rand.Rand) int64 {
	switch r.IntN(5) {
	case 0:
		return 0
	case 1:
		return -r.Int64()
	case 2:
		return r.Int64()
	}
	return r.Int64N(100000)
}

// randFill sets every exported field of the struct v points to.
func randFill(r *rand.Rand, v any) {
	rv := reflect.ValueOf(v).Elem()
	for i := 0; i < rv.NumField(); i++ {
		f := rv.Field(i)
		if r.IntN(3) == 0 {
			continue // leave zero: omitempty paths
		}
		switch f.Kind() {
		case reflect.String:
			f.SetString(randString(r))
		case reflect.Int, reflect.Int64:
			f.SetInt(randInt(r))
		case reflect.Uint64:
			f.SetUint(r.Uint64() >> r.IntN(64))
		case reflect.Bool:
			f.SetBool(r.IntN(2) == 0)
		case reflect.Map:
			n := r.IntN(4)
			m := reflect.MakeMapWithSize(f.Type(), n)
			for range n {
				m.SetMapIndex(reflect.ValueOf(randString(r)), reflect.ValueOf(randString(r)))
			}
			f.Set(m)
		case reflect.Slice:
			n := r.IntN(3)
			s := reflect.MakeSlice(f.Type(), n, n)
			for j := range n {
				s.Index(j).SetString(randString(r))
			}
			f.Set(s)
		}
	}
}

// mutate returns a variation of a valid encoding that is still valid,
// or subtly not, or valid but outside the fast path's subset.
func mutate(r *rand.Rand, b []byte) []byte {
	s := string(b)
	switch r.IntN(15) {
	case 0:
		return []byte(" \n" + s + "\t\r\n")
	case 1:
		return []byte(strings.Replace(s, ":", " : ", -1))
	case 2:
		return []byte(strings.Replace(s, ",", " ,\n", -1))
	case 3: // a name in another case: encoding/json accepts it
		return []byte(strings.Replace(s, `"owner"`, `"Owner"`, 1))
	case 4:
		return []byte(strings.Replace(s, "{", `{"bogus":1,`, 1))
	case 5:
		return []byte(s + `{}`)
	case 6:
		return []byte(s + ` x`)
	case 7:
		return b[:r.IntN(len(b)+1)]
	case 8: // duplicate field: the last wins
		return []byte(strings.Replace(s, "{", `{"owner":"first",`, 1))
	case 9:
		return []byte(strings.Replace(s, "}", `,}`, 1))
	case 10: // numbers the fast path leaves alone
		repl := []string{"1.0", "1e3", "01", "-", "-0", "18446744073709551616", "9223372036854775808", "null", `"7"`, "true"}
		for _, n := range []string{`"ttl_ms":`, `"fence":`, `"count":`, `"wait_ms":`, `"released":`, `"force":`} {
			if i := strings.Index(s, n); i >= 0 {
				j := i + len(n)
				k := j
				for k < len(s) && s[k] != ',' && s[k] != '}' {
					k++
				}
				return []byte(s[:j] + repl[r.IntN(len(repl))] + s[k:])
			}
		}
		return b
	case 11:
		return []byte(strings.Replace(s, `"key":`, `"key":null,"x":`, 1))
	case 12:
		return []byte(`[` + s + `]`)
	case 13: // metadata the fast path must read as encoding/json does
		extra := []string{`"meta":{},`, `"meta":{"a":"1","a":"2"},`, `"meta":{ "h" : "x" , "p":"" },`,
			`"meta":{"a":"1"},"meta":{"b":"2"},`, `"meta":null,`, `"meta":{"a":1},`, `"meta":{"a":"1",},`, `"meta":["a"],`}
		return []byte(strings.Replace(s, "{", "{"+extra[r.IntN(len(extra))], 1))
	}
	return b
}

// TestCodecMatchesEncodingJSON checks the fast paths against
// encoding/json on random values: AppendJSON is byte-identical to
// json.Marshal whenever it answers, and answers for every value without
// characters to escape; DecodeJSON, whenever it answers, decodes what the
// server's strict decoder and the client's json.Unmarshal decode, and it
// answers for every plain json.Marshal output.
func TestCodecMatchesEncodingJSON(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 7))
	var fastEnc, fastDec int
	for i := 0; i < 20000; i++ {
		mk := codecTypes[r.IntN(len(codecTypes))]
		v := mk()
		randFill(r, v)
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := wire.AppendJSON([]byte("prefix"), v)
		plain := !bytes.Contains(want, []byte(`\`))
		switch {
		case ok && string(got) != "prefix"+string(want):
			t.Fatalf("AppendJSON(%#v) = %s, json.Marshal = %s", v, got[6:], want)
		case !ok && string(got) != "prefix":
			t.Fatalf("AppendJSON(%#v) failed but changed the buffer", v)
		case !ok && plain && !bytes.ContainsAny(want, "<>&") && bytes.IndexFunc(want, func(r rune) bool { return r >= 0x80 }) < 0:
			t.Fatalf("AppendJSON(%#v) declined a plain value %s", v, want)
		}
		if ok {
			fastEnc++
		}

		in := want
		if r.IntN(4) != 0 {
			in = mutate(r, want)
		}
		fast := mk()
		if _, isErrBody := fast.(*api.ErrorBody); isErrBody {
			if wire.DecodeJSON(in, fast) {
				t.Fatalf("DecodeJSON decoded an ErrorBody, which it does not handle")
			}
			continue
		}
		before := reflect.ValueOf(fast).Elem().Interface()
		if !wire.DecodeJSON(in, fast) {
			if !reflect.DeepEqual(reflect.ValueOf(fast).Elem().Interface(), before) {
				t.Fatalf("DecodeJSON(%s) declined but changed its target", in)
			}
			if bytes.Equal(in, want) && plain && bytes.IndexFunc(want, func(r rune) bool { return r >= 0x80 }) < 0 &&
				!bytes.Contains(want, []byte(`"keys"`)) {
				t.Fatalf("DecodeJSON declined plain json.Marshal output %s", in)
			}
			continue
		}
		fastDec++
		strict := mk()
		if err := strictDecode(in, strict); err != nil {
			t.Fatalf("DecodeJSON accepted %s, the strict decoder refuses it: %v", in, err)
		}
		if !reflect.DeepEqual(fast, strict) {
			t.Fatalf("DecodeJSON(%s) = %#v, strict decoder %#v", in, fast, strict)
		}
		lenient := mk()
		if err := json.Unmarshal(in, lenient); err != nil || !reflect.DeepEqual(fast, lenient) {
			t.Fatalf("DecodeJSON(%s) = %#v, json.Unmarshal %#v (%v)", in, fast, lenient, err)
		}
	}
	if fastEnc < 2000 || fastDec < 2000 {
		t.Fatalf("fast paths taken too rarely to mean anything: encode %d, decode %d of 20000", fastEnc, fastDec)
	}
}

// FuzzDecodeJSON: whatever DecodeJSON accepts, the strict decoder
// accepts with the same result.
func FuzzDecodeJSON(f *testing.F) {
	for _, s := range []string{
		`{"key":"a","owner":"o","ttl_ms":1000}`,
		`{"key":"a","owner":"o","request_id":"r","force":true}`,
		`{"key":"a","owner":"o","fence":18446744073709551615,"ttl_ms":-9223372036854775808}`,
		`{"released":true,"count":3}`,
		` { "owner" : "x" , "ttl_ms" : 0 } `,
		`{"owner":"x"}{}`,
		`{"owner":"x\u0041"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		for _, mk := range codecTypes {
			fast := mk()
			if !wire.DecodeJSON(in, fast) {
				continue
			}
			strict := mk()
			if err := strictDecode(in, strict); err != nil {
				t.Fatalf("DecodeJSON(%T) accepted %q, the strict decoder refuses it: %v", fast, in, err)
			}
			if !reflect.DeepEqual(fast, strict) {
				t.Fatalf("DecodeJSON(%q) = %#v, strict decoder %#v", in, fast, strict)
			}
		}
	})
}

func BenchmarkDecodeAcquire(b *testing.B) {
	in := []byte(`{"key":"bench-12","owner":"0123456789abcdef0123456789abcdef","ttl_ms":10000,"request_id":"fedcba9876543210fedcba9876543210"}`)
	b.Run("fast", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var r api.AcquireRequest
			if !wire.DecodeJSON(in, &r) {
				b.Fatal("declined")
			}
		}
	})
	b.Run("encoding/json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var r api.AcquireRequest
			if err := strictDecode(in, &r); err != nil {
				b.Fatal(err)
			}
		}
	})
}
