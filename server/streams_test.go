package server

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	rpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"
)

// A server-reflection stream open at SIGTERM (grpcurl and grpcui hold one for as
// long as they run) ends with UNAVAILABLE once the drain delay is over, instead
// of holding GracefulStop to the end of the grace period: with a 1 s drain delay
// and an 8 s grace the daemon stopped 9.0 s after the signal, the stream
// cancelled by Stop; it now stops right after the drain delay.
func TestShutdownEndsReflectionStreams(t *testing.T) {
	const drain, grace = time.Second, 8 * time.Second
	d := startDaemon(t, func(c *Config) { c.DrainDelay, c.ShutdownGrace = drain, grace })
	conn := grpcConn(t, d)
	ctx := context.Background()
	v1, err := rpb.NewServerReflectionClient(conn).ServerReflectionInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := v1.Send(&rpb.ServerReflectionRequest{MessageRequest: &rpb.ServerReflectionRequest_ListServices{}}); err != nil {
		t.Fatal(err)
	}
	if r, err := v1.Recv(); err != nil || len(r.GetListServicesResponse().GetService()) == 0 {
		t.Fatalf("list services: %v, %v", r, err)
	}

	start := time.Now()
	if err := d.stop(); err != nil {
		t.Fatal(err)
	}
	// The margin: the HTTP and gRPC servers' own stops, well under a second.
	if took := time.Since(start); took > drain+time.Second {
		t.Errorf("stopped %v after the signal with reflection streams open (drain %v, grace %v)", took.Round(time.Millisecond), drain, grace)
	}
	if _, err := v1.Recv(); status.Code(err) != codes.Unavailable {
		t.Errorf("the stream ended with %v, want UNAVAILABLE", err)
	}
}
