package fsm

import (
	"encoding/binary"
	"strings"
)

// Holder metadata: a small list of name/value pairs an acquire carries
// (who took the lock: host, pid, command) and the hold or waiter keeps.

// Meta is a hold's or waiter's metadata: pairs in name order, names
// unique and not empty. Its order is part of the log and snapshot
// format, so a command's metadata is the same bytes on every node. A
// Meta is never changed in place once a command carries it: holds,
// waiters and query results share it.
type Meta []MetaEntry

// MetaEntry is one name/value pair of Meta.
type MetaEntry struct {
	Name, Value string
}

// MetaOf returns m as a Meta in name order (nil when m is empty).
func MetaOf(m map[string]string) Meta {
	if len(m) == 0 {
		return nil
	}
	out := make(Meta, 0, len(m))
	for k, v := range m {
		out = append(out, MetaEntry{Name: k, Value: v})
	}
	// Insertion sort: at most Config.MaxMetaEntries entries.
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j].Name < out[j-1].Name; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// Map returns m as a map (nil when m is empty).
func (m Meta) Map() map[string]string {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for _, e := range m {
		out[e.Name] = e.Value
	}
	return out
}

// Get returns the value of name, or "".
func (m Meta) Get(name string) string {
	for _, e := range m {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}

// bytes is the names' and values' total length, the figure
// Config.MaxMetaBytes bounds.
func (m Meta) bytes() int {
	n := 0
	for _, e := range m {
		n += len(e.Name) + len(e.Value)
	}
	return n
}

// checkMeta refuses metadata over the limits of the table's Config, or
// not in strict name order (which every front end's MetaOf produces).
func (c *Config) checkMeta(m Meta) error {
	if len(m) == 0 {
		return nil
	}
	if len(m) > c.MaxMetaEntries {
		return errf(ErrLimit, "%d meta entries, over the limit of %d", len(m), c.MaxMetaEntries)
	}
	for i, e := range m {
		switch {
		case e.Name == "":
			return errf(ErrBadCommand, "empty meta name")
		case i > 0 && strings.Compare(m[i-1].Name, e.Name) >= 0:
			return errf(ErrBadCommand, "meta names out of order at %q", e.Name)
		case len(e.Name) > c.MaxMetaKeyBytes:
			return errf(ErrLimit, "meta name of %d bytes, over the limit of %d", len(e.Name), c.MaxMetaKeyBytes)
		case len(e.Value) > c.MaxMetaValueBytes:
			return errf(ErrLimit, "meta %q value of %d bytes, over the limit of %d", e.Name, len(e.Value), c.MaxMetaValueBytes)
		}
	}
	if n := m.bytes(); n > c.MaxMetaBytes {
		return errf(ErrLimit, "meta of %d bytes, over the limit of %d", n, c.MaxMetaBytes)
	}
	return nil
}

// packMeta encodes m as one string: per entry the name's length
// (uvarint), the name, the value's length, the value. "" for none.
func packMeta(m Meta) string {
	if len(m) == 0 {
		return ""
	}
	n := 0
	for _, e := range m {
		n += 2*binary.MaxVarintLen32 + len(e.Name) + len(e.Value)
	}
	b := make([]byte, 0, n)
	for _, e := range m {
		b = binary.AppendUvarint(b, uint64(len(e.Name)))
		b = append(b, e.Name...)
		b = binary.AppendUvarint(b, uint64(len(e.Value)))
		b = append(b, e.Value...)
	}
	return string(b)
}

// unpackMeta decodes packMeta's encoding; its names and values share
// p's memory.
func unpackMeta(p string) Meta {
	if p == "" {
		return nil
	}
	var m Meta
	eachMeta(p, func(name, value string) { m = append(m, MetaEntry{Name: name, Value: value}) })
	return m
}

// eachMeta calls fn with each entry of packMeta's encoding p, in order,
// without allocating. It trusts p (only packMeta writes it).
func eachMeta(p string, fn func(name, value string)) {
	next := func() string {
		var n uint64
		var shift uint
		i := 0
		for ; p[i] >= 0x80; i++ {
			n |= uint64(p[i]&0x7f) << shift
			shift += 7
		}
		n |= uint64(p[i]) << shift
		s := p[i+1 : i+1+int(n)]
		p = p[i+1+int(n):]
		return s
	}
	for p != "" {
		name := next()
		fn(name, next())
	}
}
