package gateway

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// hugeErrors answers EstimateStep with an error of 20 MB (what an unbounded error
// of 100 000 violations was) and ListCatalog after a pause.
type hugeErrors struct {
	pb.UnimplementedStepcostServiceServer
}

func (hugeErrors) EstimateStep(context.Context, *pb.EstimateStepRequest) (*pb.EstimateStepResponse, error) {
	return nil, status.Error(codes.InvalidArgument, strings.Repeat("v", 20<<20))
}

func (hugeErrors) ListCatalog(context.Context, *pb.ListCatalogRequest) (*pb.ListCatalogResponse, error) {
	time.Sleep(300 * time.Millisecond)
	return &pb.ListCatalogResponse{}, nil
}

// One call whose trailers are over the gateway connection's header-list limit
// fails alone: the calls in flight beside it on the connection every REST call
// shares still succeed (the server resets that one stream, as the gateway
// advertises its limit, instead of the gateway closing the connection).
func TestOversizeTrailersFailAlone(t *testing.T) {
	lis := NewInProcess()
	gs := grpc.NewServer()
	pb.RegisterStepcostServiceServer(gs, hugeErrors{})
	go gs.Serve(lis)
	defer gs.Stop()
	conn, mux, err := New(context.Background(), lis)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	srv := httptest.NewServer(mux)
	defer srv.Close()

	var wg sync.WaitGroup
	codes := make([]int, 8)
	for i := range codes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := http.Get(srv.URL + "/v1/catalog")
			if err != nil {
				t.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			codes[i] = resp.StatusCode
		}()
	}
	time.Sleep(100 * time.Millisecond) // the catalog calls are in flight
	resp, err := http.Post(srv.URL+"/v1/steps:estimate", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	wg.Wait()
	t.Logf("oversize call: %d %.200s", resp.StatusCode, body)
	if resp.StatusCode == http.StatusOK || len(body) > 1<<20 {
		t.Errorf("oversize call: %d, %d B", resp.StatusCode, len(body))
	}
	for i, c := range codes {
		if c != http.StatusOK {
			t.Errorf("call %d beside it: %d", i, c)
		}
	}
}
