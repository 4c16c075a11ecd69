package fsm

import (
	"encoding/binary"
	"fmt"
)

// AppendStamped appends enc, a command's encoding, with the command's
// Time set to t: the bytes AppendBinary gives for the decoded command
// with that Time, made without decoding or encoding the other fields.
// Time is the first field after the presence mask, so only the header
// changes. The leader stamps a command a follower forwarded already
// encoded this way; it must still have decoded enc once (DecodeCommand),
// as only the header is checked here.
func AppendStamped(dst, enc []byte, t int64) ([]byte, error) {
	if _, err := decodeCommandHeader(enc); err != nil {
		return dst, err
	}
	mask, n := binary.Uvarint(enc[2:])
	if n <= 0 {
		return dst, errTruncated
	}
	if mask&^uint64(fAll) != 0 {
		return dst, &VersionError{What: fmt.Sprintf("command fields %#x", mask&^uint64(fAll))}
	}
	rest := enc[2+n:]
	if mask&fTime != 0 {
		_, m := binary.Varint(rest)
		if m <= 0 {
			return dst, errTruncated
		}
		rest = rest[m:]
	}
	mask &^= fTime
	if t != 0 {
		mask |= fTime
	}
	dst = append(dst, enc[0], enc[1])
	dst = binary.AppendUvarint(dst, mask)
	if t != 0 {
		dst = binary.AppendVarint(dst, t)
	}
	return append(dst, rest...), nil
}
