package wire

import (
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// JSONOptions are how the API's messages are written as JSON, by the REST gateway
// and by the CLI: proto field names, enums by name, unset fields left out.
func JSONOptions() protojson.MarshalOptions {
	return protojson.MarshalOptions{EmitUnpopulated: false, UseProtoNames: true}
}

// MarshalJSON writes m as the REST gateway does.
func MarshalJSON(m proto.Message) ([]byte, error) { return JSONOptions().Marshal(m) }
