package cache

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
)

// Key builds a canonical cache key: the hex SHA-256 (64 characters) of the parts, each
// preceded by its length as 8 big-endian bytes, so part boundaries matter
// (Key("ab", "c") != Key("a", "bc")) and the order of parts matters.
//
// Parts are typically the RPC's full method name and a deterministic serialisation of the
// normalised request: proto.MarshalOptions{Deterministic: true}.Marshal output, or
// canonical JSON. Anything that changes the response (a catalog or model version, say)
// must be one of the parts.
func Key(parts ...[]byte) string {
	h := sha256.New()
	var n [8]byte
	for _, p := range parts {
		binary.BigEndian.PutUint64(n[:], uint64(len(p)))
		h.Write(n[:])
		h.Write(p)
	}
	var sum [sha256.Size]byte
	var out [2 * sha256.Size]byte
	hex.Encode(out[:], h.Sum(sum[:0]))
	return string(out[:])
}
