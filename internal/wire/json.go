package wire

import (
	"bytes"
	"encoding/json"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// JSONOptions are how the API's messages are written as JSON, by the REST gateway
// and by the CLI: proto field names, enums by name, and every scalar, list and map
// field of a message that is present written even when it is zero — node 0 of a
// placement, index 0 of a ranked config, 0 s of exposed communication are
// answers, not absences. Messages that are not set (an estimate of a config that
// failed) are still left out, so their absence keeps its meaning.
func JSONOptions() protojson.MarshalOptions {
	return protojson.MarshalOptions{EmitDefaultValues: true, UseProtoNames: true}
}

// MarshalJSON writes m as the REST gateway does: protojson's output, compacted.
func MarshalJSON(m proto.Message) ([]byte, error) {
	b, err := JSONOptions().Marshal(m)
	if err != nil {
		return nil, err
	}
	return Compact(b), nil
}

// Compact takes out the blanks between the tokens of protojson's one-line
// output. protojson puts a space after a comma or colon or not depending on a
// hash of the running binary (google.golang.org/protobuf's internal/detrand, so
// that no one relies on its bytes), so the same answer came out as different
// bytes from one build of the daemon or the CLI to the next; a client diffing or
// hashing answers across an upgrade saw changes that were none. Compacted, the
// same answer is the same bytes from every build. b is returned as it is if it
// is not JSON (it always is: protojson wrote it).
func Compact(b []byte) []byte {
	var out bytes.Buffer
	out.Grow(len(b))
	if err := json.Compact(&out, b); err != nil {
		return b
	}
	return out.Bytes()
}
