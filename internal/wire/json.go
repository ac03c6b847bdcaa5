package wire

import (
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

// MarshalJSON writes m as the REST gateway does.
func MarshalJSON(m proto.Message) ([]byte, error) { return JSONOptions().Marshal(m) }
