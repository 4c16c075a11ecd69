package wire

import (
	"slices"
	"strconv"

	"github.com/locknode/locknode/api"
)

// Fast JSON for the bodies of the hot routes (acquire, try, release,
// extend). encoding/json spends most of a small request's encode and
// decode time on reflection, a Decoder and its buffers; these paths write
// and read the common shapes directly. They never decide anything
// encoding/json would decide differently: whatever they do not fully
// understand (escapes, non-ASCII, unknown or differently-cased names,
// null, floats, arrays, trailing data) makes them report false, and the
// caller runs encoding/json on the same bytes, whose answer (and error
// text) is then the answer. TestCodecMatchesEncodingJSON checks both
// directions against encoding/json.

// AppendJSON appends the JSON encoding of v to b, byte for byte what
// json.Marshal returns, for *api.Lease, *api.ReleaseResult,
// *api.ErrorBody, *api.AcquireRequest, *api.ReleaseRequest and
// *api.ExtendRequest whose strings need no escaping. ok is false (and b
// unchanged) for anything else: use json.Marshal then.
func AppendJSON(b []byte, v any) (out []byte, ok bool) {
	e := jsonEnc{b: b, ok: true}
	switch v := v.(type) {
	case *api.Lease:
		e.open()
		e.strOmit("key", v.Key)
		e.strsOmit("keys", v.Keys)
		e.str("owner", v.Owner)
		e.uint("fence", v.Fence)
		e.int("ttl_ms", v.TTLMs)
		e.intOmit("count", int64(v.Count))
		e.intOmit("deadline_ms", v.Deadline)
		e.intOmit("waited_ms", v.WaitedMs)
	case *api.ReleaseResult:
		e.open()
		e.bool("released", v.Released)
		e.int("count", int64(v.Count))
	case *api.ErrorBody:
		e.open()
		e.str("code", v.Code)
		e.str("message", v.Message)
	case *api.AcquireRequest:
		e.open()
		e.strOmit("key", v.Key)
		e.strsOmit("keys", v.Keys)
		e.str("owner", v.Owner)
		e.int("ttl_ms", v.TTLMs)
		e.intOmit("wait_ms", v.WaitMs)
		e.strOmit("mode", v.Mode)
		e.intOmit("permits", int64(v.Permits))
		e.boolOmit("reentrant", v.Reentrant)
		e.strOmit("session", v.Session)
		e.strOmit("request_id", v.RequestID)
		e.intOmit("lock_delay_ms", v.LockDelay)
		e.intOmit("max_hold_ms", v.MaxHoldMs)
		e.strMapOmit("meta", v.Meta)
	case *api.ReleaseRequest:
		e.open()
		e.strOmit("key", v.Key)
		e.strsOmit("keys", v.Keys)
		e.str("owner", v.Owner)
		e.boolOmit("reentrant", v.Reentrant)
		e.boolOmit("force", v.Force)
		e.strOmit("request_id", v.RequestID)
	case *api.ExtendRequest:
		e.open()
		e.strOmit("key", v.Key)
		e.strsOmit("keys", v.Keys)
		e.str("owner", v.Owner)
		e.int("ttl_ms", v.TTLMs)
		e.strOmit("request_id", v.RequestID)
	default:
		return b, false
	}
	if !e.ok {
		return b, false
	}
	return append(e.b, '}'), true
}

// jsonEnc writes one flat object. Field names are constants that need
// no escaping; ok turns false on a string value that would.
type jsonEnc struct {
	b     []byte
	ok    bool
	comma bool
}

func (e *jsonEnc) open() { e.b = append(e.b, '{') }

func (e *jsonEnc) name(n string) {
	if e.comma {
		e.b = append(e.b, ',')
	}
	e.comma = true
	e.b = append(e.b, '"')
	e.b = append(e.b, n...)
	e.b = append(e.b, '"', ':')
}

func (e *jsonEnc) str(n, v string) {
	if !plainString(v) {
		e.ok = false
		return
	}
	e.name(n)
	e.b = append(e.b, '"')
	e.b = append(e.b, v...)
	e.b = append(e.b, '"')
}

func (e *jsonEnc) strOmit(n, v string) {
	if v != "" {
		e.str(n, v)
	}
}

func (e *jsonEnc) strsOmit(n string, v []string) {
	if len(v) == 0 {
		return
	}
	e.name(n)
	e.b = append(e.b, '[')
	for i, s := range v {
		if !plainString(s) {
			e.ok = false
			return
		}
		if i > 0 {
			e.b = append(e.b, ',')
		}
		e.b = append(e.b, '"')
		e.b = append(e.b, s...)
		e.b = append(e.b, '"')
	}
	e.b = append(e.b, ']')
}

// strMapOmit writes a map as json.Marshal does: names in byte order.
func (e *jsonEnc) strMapOmit(n string, m map[string]string) {
	if len(m) == 0 {
		return
	}
	var buf [16]string
	names := buf[:0]
	for k, v := range m {
		if !plainString(k) || !plainString(v) {
			e.ok = false
			return
		}
		names = append(names, k)
	}
	slices.Sort(names)
	e.name(n)
	e.b = append(e.b, '{')
	for i, k := range names {
		if i > 0 {
			e.b = append(e.b, ',')
		}
		e.b = append(e.b, '"')
		e.b = append(e.b, k...)
		e.b = append(e.b, '"', ':', '"')
		e.b = append(e.b, m[k]...)
		e.b = append(e.b, '"')
	}
	e.b = append(e.b, '}')
}

func (e *jsonEnc) int(n string, v int64) {
	e.name(n)
	e.b = strconv.AppendInt(e.b, v, 10)
}

func (e *jsonEnc) intOmit(n string, v int64) {
	if v != 0 {
		e.int(n, v)
	}
}

func (e *jsonEnc) uint(n string, v uint64) {
	e.name(n)
	e.b = strconv.AppendUint(e.b, v, 10)
}

func (e *jsonEnc) bool(n string, v bool) {
	e.name(n)
	e.b = strconv.AppendBool(e.b, v)
}

func (e *jsonEnc) boolOmit(n string, v bool) {
	if v {
		e.bool(n, v)
	}
}

// plainString reports whether json.Marshal writes s as is between quotes:
// printable ASCII without '"', '\\' and the HTML characters it escapes.
func plainString(s string) bool {
	for i := 0; i < len(s); i++ {
		if !plainByte(s[i]) {
			return false
		}
	}
	return true
}

func plainByte(c byte) bool {
	return c >= 0x20 && c < 0x80 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
}

// DecodeJSON decodes data into v (one of the pointer types AppendJSON
// takes) when data is one flat JSON object whose names are v's field
// names exactly, whose strings hold no escapes and only printable ASCII,
// whose numbers are integers in range and which has nothing but
// whitespace after it. It then reports true and v holds what encoding/json
// would decode (unknown-field checking included: such an object has no
// unknown field). Otherwise it reports false and leaves v untouched: run
// encoding/json on data.
func DecodeJSON(data []byte, v any) bool {
	d := jsonDec{b: data}
	switch v := v.(type) {
	case *api.AcquireRequest:
		return d.acquireRequest(v)
	case *api.ReleaseRequest:
		return d.releaseRequest(v)
	case *api.ExtendRequest:
		return d.extendRequest(v)
	case *api.Lease:
		return d.lease(v)
	case *api.ReleaseResult:
		return d.releaseResult(v)
	}
	return false
}

// acquireRequest is DecodeJSON for an api.AcquireRequest.
func (d *jsonDec) acquireRequest(v *api.AcquireRequest) bool {
	return decodeObject(d, v, func(r *api.AcquireRequest, n []byte) bool {
		switch string(n) {
		case "key":
			return d.str(&r.Key)
		case "owner":
			return d.str(&r.Owner)
		case "ttl_ms":
			return d.int(&r.TTLMs)
		case "wait_ms":
			return d.int(&r.WaitMs)
		case "mode":
			return d.str(&r.Mode)
		case "permits":
			return d.intInt(&r.Permits)
		case "reentrant":
			return d.bool(&r.Reentrant)
		case "session":
			return d.str(&r.Session)
		case "request_id":
			return d.str(&r.RequestID)
		case "lock_delay_ms":
			return d.int(&r.LockDelay)
		case "max_hold_ms":
			return d.int(&r.MaxHoldMs)
		case "meta":
			return d.strMap(&r.Meta)
		}
		return false
	})
}

// releaseRequest is DecodeJSON for an api.ReleaseRequest.
func (d *jsonDec) releaseRequest(v *api.ReleaseRequest) bool {
	return decodeObject(d, v, func(r *api.ReleaseRequest, n []byte) bool {
		switch string(n) {
		case "key":
			return d.str(&r.Key)
		case "owner":
			return d.str(&r.Owner)
		case "reentrant":
			return d.bool(&r.Reentrant)
		case "force":
			return d.bool(&r.Force)
		case "request_id":
			return d.str(&r.RequestID)
		}
		return false
	})
}

// extendRequest is DecodeJSON for an api.ExtendRequest.
func (d *jsonDec) extendRequest(v *api.ExtendRequest) bool {
	return decodeObject(d, v, func(r *api.ExtendRequest, n []byte) bool {
		switch string(n) {
		case "key":
			return d.str(&r.Key)
		case "owner":
			return d.str(&r.Owner)
		case "ttl_ms":
			return d.int(&r.TTLMs)
		case "request_id":
			return d.str(&r.RequestID)
		}
		return false
	})
}

// lease is DecodeJSON for an api.Lease.
func (d *jsonDec) lease(v *api.Lease) bool {
	return decodeObject(d, v, func(r *api.Lease, n []byte) bool {
		switch string(n) {
		case "key":
			return d.str(&r.Key)
		case "owner":
			return d.str(&r.Owner)
		case "fence":
			return d.uint(&r.Fence)
		case "ttl_ms":
			return d.int(&r.TTLMs)
		case "count":
			return d.intInt(&r.Count)
		case "deadline_ms":
			return d.int(&r.Deadline)
		case "waited_ms":
			return d.int(&r.WaitedMs)
		}
		return false
	})
}

// releaseResult is DecodeJSON for an api.ReleaseResult.
func (d *jsonDec) releaseResult(v *api.ReleaseResult) bool {
	return decodeObject(d, v, func(r *api.ReleaseResult, n []byte) bool {
		switch string(n) {
		case "released":
			return d.bool(&r.Released)
		case "count":
			return d.intInt(&r.Count)
		}
		return false
	})
}

// jsonDec reads one flat object; every method reports false on anything
// outside the fast path's subset.
type jsonDec struct {
	b []byte
	i int
}

func (d *jsonDec) ws() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// object reads {"name": value, ...} then only whitespace to the end;
// field reads the value of each name (false: unknown name or bad value).
func (d *jsonDec) object(field func(name []byte) bool) bool {
	d.ws()
	if d.i >= len(d.b) || d.b[d.i] != '{' {
		return false
	}
	d.i++
	d.ws()
	if d.i < len(d.b) && d.b[d.i] == '}' {
		d.i++
		return d.end()
	}
	for {
		d.ws()
		n, ok := d.rawString()
		if !ok {
			return false
		}
		d.ws()
		if d.i >= len(d.b) || d.b[d.i] != ':' {
			return false
		}
		d.i++
		d.ws()
		if !field(n) {
			return false
		}
		d.ws()
		if d.i >= len(d.b) {
			return false
		}
		switch d.b[d.i] {
		case ',':
			d.i++
		case '}':
			d.i++
			return d.end()
		default:
			return false
		}
	}
}

func (d *jsonDec) end() bool {
	d.ws()
	return d.i == len(d.b)
}

// rawString reads a string without escapes of printable ASCII and returns
// its contents (aliasing the input).
func (d *jsonDec) rawString() ([]byte, bool) {
	if d.i >= len(d.b) || d.b[d.i] != '"' {
		return nil, false
	}
	start := d.i + 1
	for j := start; j < len(d.b); j++ {
		c := d.b[j]
		if c == '"' {
			d.i = j + 1
			return d.b[start:j], true
		}
		if c < 0x20 || c >= 0x80 || c == '\\' {
			return nil, false
		}
	}
	return nil, false
}

func (d *jsonDec) str(dst *string) bool {
	s, ok := d.rawString()
	if ok {
		*dst = string(s)
	}
	return ok
}

// strMap reads an object of strings into a new map, as encoding/json
// does: an empty object is an empty map, a name given twice keeps its
// last value. A second object for the same field would be merged into
// the first by encoding/json: that is left to it.
func (d *jsonDec) strMap(dst *map[string]string) bool {
	if *dst != nil || d.i >= len(d.b) || d.b[d.i] != '{' {
		return false
	}
	d.i++
	m := make(map[string]string)
	d.ws()
	if d.i < len(d.b) && d.b[d.i] == '}' {
		d.i++
		*dst = m
		return true
	}
	for {
		d.ws()
		k, ok := d.rawString()
		if !ok {
			return false
		}
		d.ws()
		if d.i >= len(d.b) || d.b[d.i] != ':' {
			return false
		}
		d.i++
		d.ws()
		v, ok := d.rawString()
		if !ok {
			return false
		}
		m[string(k)] = string(v)
		d.ws()
		if d.i >= len(d.b) {
			return false
		}
		switch d.b[d.i] {
		case ',':
			d.i++
		case '}':
			d.i++
			*dst = m
			return true
		default:
			return false
		}
	}
}

func (d *jsonDec) bool(dst *bool) bool {
	rest := d.b[d.i:]
	switch {
	case len(rest) >= 4 && string(rest[:4]) == "true":
		*dst = true
		d.i += 4
	case len(rest) >= 5 && string(rest[:5]) == "false":
		*dst = false
		d.i += 5
	default:
		return false
	}
	return d.delimited()
}

// delimited reports whether a literal or number ended where it should:
// at the end of the object's value (whitespace, ',' or '}').
func (d *jsonDec) delimited() bool {
	if d.i >= len(d.b) {
		return false
	}
	switch d.b[d.i] {
	case ' ', '\t', '\n', '\r', ',', '}':
		return true
	}
	return false
}

// digits reads -?(0|[1-9][0-9]*) followed by a delimiter; the sign and
// digits are returned.
func (d *jsonDec) digits() (neg bool, ds []byte, ok bool) {
	j := d.i
	if j < len(d.b) && d.b[j] == '-' {
		neg = true
		j++
	}
	start := j
	for j < len(d.b) && d.b[j] >= '0' && d.b[j] <= '9' {
		j++
	}
	ds = d.b[start:j]
	if len(ds) == 0 || len(ds) > 20 || (len(ds) > 1 && ds[0] == '0') {
		return false, nil, false
	}
	d.i = j
	return neg, ds, d.delimited()
}

func (d *jsonDec) uint(dst *uint64) bool {
	neg, ds, ok := d.digits()
	if !ok || neg {
		return false
	}
	u, err := strconv.ParseUint(string(ds), 10, 64)
	if err != nil {
		return false
	}
	*dst = u
	return true
}

func (d *jsonDec) int(dst *int64) bool {
	neg, ds, ok := d.digits()
	if !ok {
		return false
	}
	u, err := strconv.ParseUint(string(ds), 10, 64)
	if err != nil || u > 1<<63-1 {
		return false
	}
	n := int64(u)
	if neg {
		n = -n
	}
	*dst = n
	return true
}

func (d *jsonDec) intInt(dst *int) bool {
	var n int64
	if !d.int(&n) || int64(int(n)) != n {
		return false
	}
	*dst = int(n)
	return true
}

// decodeObject decodes one JSON object into a fresh T, field by field
// through field (false: an unknown field or a bad value), and stores it
// in *v only when the whole object decoded.
func decodeObject[T any](d *jsonDec, v *T, field func(r *T, name []byte) bool) bool {
	var r T
	if !d.object(func(n []byte) bool { return field(&r, n) }) {
		return false
	}
	*v = r
	return true
}
