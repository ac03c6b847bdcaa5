package cli

import (
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"

	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// rank --format json writes the API's answer in request order, as
// RankConfigsResponse.results documents it and REST writes it, each result's
// rank giving its place: configs' first line (full recomputation) ranks below
// its third (selective), and the second is refused. It wrote them best first.
func TestRankJSONInRequestOrder(t *testing.T) {
	f := filepath.Join(t.TempDir(), "c.jsonl")
	if err := os.WriteFile(f, []byte(configs), 0o600); err != nil {
		t.Fatal(err)
	}
	_, out, errOut := run("rank", "--in", f, "--format", "json")
	var resp pb.RankConfigsResponse
	if err := protojson.Unmarshal([]byte(out), &resp); err != nil || len(resp.GetResults()) != 3 {
		t.Fatalf("%v: %.300s%.300s", err, out, errOut)
	}
	for i, r := range resp.GetResults() {
		if int(r.GetIndex()) != i {
			t.Errorf("result %d has index %d: not in request order", i, r.GetIndex())
		}
	}
	if a, b := resp.GetResults()[0].GetRank(), resp.GetResults()[2].GetRank(); a != 2 || b != 1 {
		t.Errorf("ranks %d and %d of the first and third configs; want 2 and 1", a, b)
	}
}
