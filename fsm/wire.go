package fsm

// Decoder reads a message built of the fields fsm's encodings use
// (bytes, uvarints, varints, length-prefixed strings), so a protocol that
// frames commands and results (cluster's RPCs) reads them with the same
// code as the log does. The first error sticks: later reads return zero
// values and Err reports it.
type Decoder struct{ d decoder }

// NewDecoder returns a Decoder reading b; what it returns aliases b.
func NewDecoder(b []byte) *Decoder { return &Decoder{d: decoder{b: b}} }

// Byte reads one byte.
func (d *Decoder) Byte() byte { return d.d.byte() }

// Uvarint reads an unsigned varint (binary.AppendUvarint).
func (d *Decoder) Uvarint() uint64 { return d.d.uvarint() }

// Varint reads a signed varint (binary.AppendVarint).
func (d *Decoder) Varint() int64 { return d.d.varint() }

// Bytes reads a uvarint length and that many bytes, not copied. Only a
// length beyond the input is refused: the message's size was bounded by
// whoever read it.
func (d *Decoder) Bytes() []byte { return d.d.rawBytes() }

// Str reads what Bytes reads, as a string.
func (d *Decoder) Str() string { return string(d.d.rawBytes()) }

// Len returns the number of bytes not read yet.
func (d *Decoder) Len() int { return len(d.d.b) }

// Err returns the first error: the input ended early, or a varint was
// malformed.
func (d *Decoder) Err() error { return d.d.err }
