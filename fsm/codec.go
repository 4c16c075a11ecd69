package fsm

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Command encoding (log format version 1):
//
//	byte    format version (1)
//	byte    Op
//	uvarint presence mask: bit i set = field i follows, in bit order
//	fields  ints as varints, strings/bytes as uvarint length + bytes,
//	        lists as uvarint count + items
//
// Zero fields are omitted, so a typical acquire is ~40 bytes. Decoding is
// strict: unknown version, unknown mask bits, truncation, trailing bytes and
// oversized lengths are errors.
const cmdVersion = 1

const (
	fTime = 1 << iota
	fReqID
	fKey
	fKeys
	fOwner
	fMode
	fPermits
	fTTL
	fWait
	fReentrant
	fForce
	fSession
	fLockDelay
	fMaxHold
	fToken
	fArgs
	fKeysB
	fScript
	fMulti
	fWatch
	fReadOnly
	fNoForce
	fKeysOnly
	fMeta
	fAll = fMeta<<1 - 1
)

// maxDecodeLen bounds any single length in an encoded command, so garbage
// cannot make the decoder allocate much.
const maxDecodeLen = 64 << 20

// MarshalBinary encodes c.
func (c *Command) MarshalBinary() ([]byte, error) {
	return c.AppendBinary(make([]byte, 0, 64)), nil
}

// mask is the encoding's presence mask of c: a bit per non-zero field.
func (c *Command) mask() uint64 {
	var mask uint64
	set := func(bit uint64, on bool) {
		if on {
			mask |= bit
		}
	}
	set(fTime, c.Time != 0)
	set(fReqID, c.ReqID != "")
	set(fKey, c.Key != "")
	set(fKeys, len(c.Keys) > 0)
	set(fOwner, c.Owner != "")
	set(fMode, c.Mode != 0)
	set(fPermits, c.Permits != 0)
	set(fTTL, c.TTL != 0)
	set(fWait, c.Wait != 0)
	set(fReentrant, c.Reentrant)
	set(fForce, c.Force)
	set(fSession, c.Session != "")
	set(fLockDelay, c.LockDelay != 0)
	set(fMaxHold, c.MaxHold != 0)
	set(fToken, c.Token != 0)
	set(fArgs, len(c.Args) > 0)
	set(fKeysB, len(c.KeysB) > 0)
	set(fScript, len(c.Script) > 0)
	set(fMulti, len(c.Multi) > 0)
	set(fWatch, len(c.Watch) > 0)
	set(fReadOnly, c.ReadOnly)
	set(fNoForce, c.NoForce)
	set(fKeysOnly, c.KeysOnly)
	set(fMeta, len(c.Meta) > 0)
	return mask
}

// AppendBinary appends the encoding of c to b.
func (c *Command) AppendBinary(b []byte) []byte {
	mask := c.mask()
	b = append(b, cmdVersion, byte(c.Op))
	b = binary.AppendUvarint(b, mask)
	str := func(s string) { b = binary.AppendUvarint(b, uint64(len(s))); b = append(b, s...) }
	byt := func(s []byte) { b = binary.AppendUvarint(b, uint64(len(s))); b = append(b, s...) }
	bytList := func(l [][]byte) {
		b = binary.AppendUvarint(b, uint64(len(l)))
		for _, s := range l {
			byt(s)
		}
	}
	if mask&fTime != 0 {
		b = binary.AppendVarint(b, c.Time)
	}
	if mask&fReqID != 0 {
		str(c.ReqID)
	}
	if mask&fKey != 0 {
		str(c.Key)
	}
	if mask&fKeys != 0 {
		b = binary.AppendUvarint(b, uint64(len(c.Keys)))
		for _, k := range c.Keys {
			str(k)
		}
	}
	if mask&fOwner != 0 {
		str(c.Owner)
	}
	if mask&fMode != 0 {
		b = append(b, byte(c.Mode))
	}
	if mask&fPermits != 0 {
		b = binary.AppendVarint(b, int64(c.Permits))
	}
	if mask&fTTL != 0 {
		b = binary.AppendVarint(b, c.TTL)
	}
	if mask&fWait != 0 {
		b = binary.AppendVarint(b, c.Wait)
	}
	// fReentrant, fForce and fReadOnly are carried by the mask alone.
	if mask&fSession != 0 {
		str(c.Session)
	}
	if mask&fLockDelay != 0 {
		b = binary.AppendVarint(b, c.LockDelay)
	}
	if mask&fMaxHold != 0 {
		b = binary.AppendVarint(b, c.MaxHold)
	}
	if mask&fToken != 0 {
		b = binary.AppendUvarint(b, c.Token)
	}
	if mask&fArgs != 0 {
		bytList(c.Args)
	}
	if mask&fKeysB != 0 {
		bytList(c.KeysB)
	}
	if mask&fScript != 0 {
		byt(c.Script)
	}
	if mask&fMulti != 0 {
		b = binary.AppendUvarint(b, uint64(len(c.Multi)))
		for _, l := range c.Multi {
			bytList(l)
		}
	}
	if mask&fWatch != 0 {
		b = binary.AppendUvarint(b, uint64(len(c.Watch)))
		for _, w := range c.Watch {
			str(w.Key)
			b = binary.AppendUvarint(b, w.Version)
		}
	}
	if mask&fMeta != 0 {
		b = binary.AppendUvarint(b, uint64(len(c.Meta)))
		for _, e := range c.Meta {
			str(e.Name)
			str(e.Value)
		}
	}
	return b
}

var errTruncated = errors.New("truncated")

type decoder struct {
	b   []byte
	err error
	// lists, when set, is an arena the byte lists are cut from, rather
	// than an allocation each: decodeRenewals decodes a whole batch's
	// KEYS and ARGV into one reused slab.
	lists *[][]byte
	// internSHA says Key may be a known renewal script's SHA1
	// (renewalSHAText), returned without allocating a copy.
	internSHA bool
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = errTruncated
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.err = errTruncated
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) length() int {
	n := d.uvarint()
	if d.err == nil && (n > maxDecodeLen || n > uint64(len(d.b))) {
		// A count can never exceed the remaining bytes: each item takes
		// at least one byte.
		d.err = fmt.Errorf("length %d exceeds input", n)
		return 0
	}
	return int(n)
}

func (d *decoder) bytes() []byte {
	n := d.length()
	if d.err != nil {
		return nil
	}
	s := d.b[:n:n]
	d.b = d.b[n:]
	return s
}

func (d *decoder) str() string { return string(d.bytes()) }

// key is str for the Key field: a known renewal script's SHA1 comes
// without a copy when internSHA is set (a batch of renewals names the
// same script in every renewal).
func (d *decoder) key() string {
	b := d.bytes()
	if d.internSHA {
		if s, ok := renewalSHAText[string(b)]; ok {
			return s
		}
	}
	return string(b)
}

func (d *decoder) bytList() [][]byte {
	n := d.length()
	if d.err != nil {
		return nil
	}
	var l [][]byte
	if a := d.lists; a != nil && cap(*a)-len(*a) >= n {
		m := len(*a)
		l = (*a)[m : m+n : m+n]
		*a = (*a)[:m+n]
	} else {
		l = make([][]byte, n)
	}
	for i := range l {
		l[i] = d.bytes()
	}
	return l
}

// DecodeCommand decodes an encoded command. The result aliases b.
func DecodeCommand(b []byte) (cmd *Command, err error) {
	c := new(Command)
	if err := DecodeCommandInto(c, b); err != nil {
		return nil, err
	}
	return c, nil
}

// DecodeCommandInto is DecodeCommand into *c, which it overwrites whole:
// a caller that decodes entry after entry (the apply loop) reuses one
// Command instead of allocating one per entry. The decoded fields share
// no memory with a previous content of *c. On error *c is undefined.
func DecodeCommandInto(c *Command, b []byte) error {
	return decodeCommandInto(c, b, decoder{})
}

// DecodeCommandArena is DecodeCommandInto with the byte lists (KEYS,
// ARGV, a Redis command's arguments) cut from the arena *lists while its
// capacity lasts (appended to its length; past it, allocated), and a
// known renewal script's SHA1 as Key without a copy: a caller that
// decodes many commands it drops together (a forwarded batch) allocates
// no list apiece. The lists alias *lists and b.
func DecodeCommandArena(c *Command, b []byte, lists *[][]byte) error {
	return decodeCommandInto(c, b, decoder{lists: lists, internSHA: true})
}

// decodeCommandInto is DecodeCommandInto with d's options (an arena for
// the byte lists, SHA1 interning); d.b is set here.
func decodeCommandInto(c *Command, b []byte, d decoder) (err error) {
	// Total on any input, so a log entry can never stop a node: a decoder
	// bug becomes a refused command.
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("decoder panic: %v", p)
		}
	}()
	op, err := decodeCommandHeader(b)
	if err != nil {
		return err
	}
	*c = Command{Op: op}
	d.b, d.err = b[2:], nil
	mask := d.uvarint()
	if mask&^uint64(fAll) != 0 {
		return &VersionError{What: fmt.Sprintf("command fields %#x", mask&^uint64(fAll))}
	}
	// The fields follow in mask bit order; each part reads its own.
	d.lockFields(c, mask)
	d.redisFields(c, mask)
	d.metaField(c, mask)
	if d.err != nil {
		return d.err
	}
	if len(d.b) != 0 {
		return fmt.Errorf("%d trailing bytes", len(d.b))
	}
	return nil
}

// decodeCommandHeader checks an encoded command's format and op (its
// first two bytes) and returns the op.
func decodeCommandHeader(b []byte) (Op, error) {
	if len(b) < 3 {
		return 0, errTruncated
	}
	// A format, op or field unknown here comes from a newer binary (or
	// is garbage, which no proposer writes): a *VersionError, which
	// halts the table rather than let it skip what others apply.
	if b[0] > cmdVersion {
		return 0, &VersionError{What: fmt.Sprintf("command format %d", b[0])}
	}
	if b[0] != cmdVersion {
		return 0, fmt.Errorf("unknown command format version %d", b[0])
	}
	op := Op(b[1])
	if _, ok := OpVersion(op); !ok && op != OpInvalid {
		return 0, &VersionError{What: fmt.Sprintf("log entry op %d", op)}
	}
	return op, nil
}

// lockFields reads the fields of the lock ops (time through token) and
// the flag bits, which carry no bytes.
func (d *decoder) lockFields(c *Command, mask uint64) {
	if mask&fTime != 0 {
		c.Time = d.varint()
	}
	if mask&fReqID != 0 {
		c.ReqID = d.str()
	}
	if mask&fKey != 0 {
		c.Key = d.key()
	}
	if mask&fKeys != 0 {
		n := d.length()
		if d.err == nil {
			c.Keys = make([]string, n)
			for i := range c.Keys {
				c.Keys[i] = d.str()
			}
		}
	}
	if mask&fOwner != 0 {
		c.Owner = d.str()
	}
	if mask&fMode != 0 {
		if len(d.b) == 0 {
			d.err = errTruncated
		} else {
			c.Mode = Mode(d.b[0])
			d.b = d.b[1:]
		}
	}
	if mask&fPermits != 0 {
		c.Permits = int(d.varint())
	}
	if mask&fTTL != 0 {
		c.TTL = d.varint()
	}
	if mask&fWait != 0 {
		c.Wait = d.varint()
	}
	c.Reentrant = mask&fReentrant != 0
	c.Force = mask&fForce != 0
	c.ReadOnly = mask&fReadOnly != 0
	c.NoForce = mask&fNoForce != 0
	c.KeysOnly = mask&fKeysOnly != 0
	if mask&fSession != 0 {
		c.Session = d.str()
	}
	if mask&fLockDelay != 0 {
		c.LockDelay = d.varint()
	}
	if mask&fMaxHold != 0 {
		c.MaxHold = d.varint()
	}
	if mask&fToken != 0 {
		c.Token = d.uvarint()
	}
}

// redisFields reads the fields of the Redis ops: arguments, keys, a
// script, a transaction's commands and its watched keys.
func (d *decoder) redisFields(c *Command, mask uint64) {
	if mask&fArgs != 0 {
		c.Args = d.bytList()
	}
	if mask&fKeysB != 0 {
		c.KeysB = d.bytList()
	}
	if mask&fScript != 0 {
		c.Script = d.bytes()
	}
	if mask&fMulti != 0 {
		n := d.length()
		if d.err == nil {
			c.Multi = make([][][]byte, n)
			for i := range c.Multi {
				c.Multi[i] = d.bytList()
			}
		}
	}
	if mask&fWatch != 0 {
		n := d.length()
		if d.err == nil {
			c.Watch = make([]WatchKey, n)
			for i := range c.Watch {
				c.Watch[i].Key = d.str()
				c.Watch[i].Version = d.uvarint()
			}
		}
	}
}

// metaField reads a hold's metadata, the last field.
func (d *decoder) metaField(c *Command, mask uint64) {
	if mask&fMeta != 0 {
		n := d.length()
		if d.err == nil {
			c.Meta = make(Meta, n)
			for i := range c.Meta {
				c.Meta[i].Name = d.str()
				c.Meta[i].Value = d.str()
			}
		}
	}
}
