package redisbridge

import "bytes"

// Redis Cluster key slots: CRC16 (XMODEM) of the key, or of its hash tag,
// modulo 16384 — the same function every cluster client routes by.

// numSlots is Redis Cluster's fixed slot count.
const numSlots = 16384

// crc16Table is CRC16-CCITT (XMODEM: polynomial 0x1021, initial 0), as
// Redis' crc16.c.
var crc16Table = func() (t [256]uint16) {
	for i := range t {
		c := uint16(i) << 8
		for range 8 {
			if c&0x8000 != 0 {
				c = c<<1 ^ 0x1021
			} else {
				c <<= 1
			}
		}
		t[i] = c
	}
	return t
}()

func crc16(b []byte) uint16 {
	var c uint16
	for _, x := range b {
		c = c<<8 ^ crc16Table[byte(c>>8)^x]
	}
	return c
}

// keySlot is key's hash slot. A hash tag — the bytes between the first
// '{' and the first '}' after it, when not empty — is hashed instead of
// the whole key, so {user1}:a and {user1}:b share a slot.
func keySlot(key []byte) int {
	if i := bytes.IndexByte(key, '{'); i >= 0 {
		if j := bytes.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	return int(crc16(key) & (numSlots - 1))
}

// sameSlot returns the slot all keys hash to, -1 when there are none, or
// ok false when they span slots.
func sameSlot(keys [][]byte) (slot int, ok bool) {
	slot = -1
	for _, k := range keys {
		s := keySlot(k)
		if slot >= 0 && s != slot {
			return slot, false
		}
		slot = s
	}
	return slot, true
}
