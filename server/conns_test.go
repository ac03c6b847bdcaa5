package server

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// flagDaemon is a daemon configured by its command-line flags (and loopback
// ports, no warm-up), stopped at the end of the test.
func flagDaemon(t *testing.T, args ...string) daemon {
	t.Helper()
	cfg, err := ParseFlags(append([]string{"--grpc-addr=127.0.0.1:0", "--http-addr=127.0.0.1:0", "--warm-up=none"}, args...), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	return secureDaemon(t, func(c *Config) { *c = cfg })
}

// closedWithin says whether the server closes c within d (reading and dropping
// whatever it answers first).
func closedWithin(c net.Conn, d time.Duration) bool {
	c.SetReadDeadline(time.Now().Add(d))
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	return !(errors.As(err, &ne) && ne.Timeout())
}

// A request body sent a byte a second is cut at --read-timeout.
func TestSlowBodyIsCut(t *testing.T) {
	d := flagDaemon(t, "--read-timeout=1s")
	c, err := net.Dial("tcp", d.httpAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "POST /v1/steps:estimate HTTP/1.1\r\nHost: stepcost\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{")
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Millisecond):
				if _, err := c.Write([]byte(" ")); err != nil {
					return
				}
			}
		}
	}()
	start := time.Now()
	if !closedWithin(c, 5*time.Second) {
		t.Fatal("a body trickling in is still being read after 5 s")
	}
	t.Logf("closed after %v", time.Since(start).Round(time.Millisecond))
}

// A gRPC call whose message never comes ends at the default deadline.
func TestSlowGRPCMessageIsCut(t *testing.T) {
	d := flagDaemon(t, "--default-deadline=1s")
	conn := grpcConn(t, d)
	ctx, cancel := context.WithCancel(context.Background()) // no deadline: none is sent
	defer cancel()
	s, err := conn.NewStream(ctx, &grpc.StreamDesc{ClientStreams: true, ServerStreams: true}, "/stepcost.v1.StepcostService/EstimateStep")
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() { got <- s.RecvMsg(&pb.EstimateStepResponse{}) }()
	select {
	case err := <-got:
		if status.Code(err) != codes.DeadlineExceeded {
			t.Errorf("%v, want DEADLINE_EXCEEDED", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a call without its message is still open after 5 s")
	}
}

// An idle keep-alive connection is closed at --idle-timeout, on HTTP and gRPC.
func TestIdleConnectionsAreClosed(t *testing.T) {
	d := flagDaemon(t, "--idle-timeout=1s")
	c, err := net.Dial("tcp", d.httpAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: stepcost\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("healthz: %s", resp.Status)
	}
	if !closedWithin(c, 5*time.Second) {
		t.Error("HTTP: an idle keep-alive connection is still open after 5 s")
	}

	conn := grpcConn(t, d)
	if _, err := pb.NewStepcostServiceClient(conn).ListCatalog(context.Background(), &pb.ListCatalogRequest{}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for s := conn.GetState(); s == connectivity.Ready; s = conn.GetState() {
		if !conn.WaitForStateChange(ctx, s) {
			t.Fatal("gRPC: an idle connection is still open after 5 s")
		}
	}
}

// Connections over --max-connections are closed as they are accepted, on both
// ports; a slot given back is taken again.
func TestConnectionCap(t *testing.T) {
	d := flagDaemon(t, "--max-connections=2")
	for _, addr := range []string{d.httpAddr, d.grpcAddr} {
		var held []net.Conn
		for range 2 {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			held = append(held, c)
		}
		time.Sleep(100 * time.Millisecond) // let the server accept both
		extra, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		if !closedWithin(extra, 2*time.Second) {
			t.Errorf("%s: a third connection is open", addr)
		}
		extra.Close()
		held[0].Close()
		time.Sleep(100 * time.Millisecond)
		again, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		if closedWithin(again, 500*time.Millisecond) {
			t.Errorf("%s: a connection in the slot given back was closed", addr)
		}
		again.Close()
	}
}

// Streams meant to stay open (health's Watch) are not cut at the default deadline.
func TestWatchOutlivesTheDefaultDeadline(t *testing.T) {
	d := flagDaemon(t, "--default-deadline=1s")
	conn := grpcConn(t, d)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, err := healthpb.NewHealthClient(conn).Watch(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Recv(); err != nil { // the status now
		t.Fatal(err)
	}
	ended := make(chan error, 1)
	go func() { _, err := w.Recv(); ended <- err }()
	select {
	case err := <-ended:
		t.Fatalf("the watch ended: %v", err)
	case <-time.After(2500 * time.Millisecond):
	}
}
