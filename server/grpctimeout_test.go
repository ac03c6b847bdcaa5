package server

import (
	"bytes"
	"encoding/binary"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
)

// A Grpc-Timeout header is, in gRPC over HTTP/2 (PROTOCOL-HTTP2.md: Timeout →
// "grpc-timeout" TimeoutValue TimeoutUnit; TimeoutValue → {positive integer as
// ASCII string of at most 8 digits}; TimeoutUnit → Hour "H" / Minute "M" / Second
// "S" / Millisecond "m" / Microsecond "u" / Nanosecond "n"), one to eight digits
// then a unit. A REST call whose header is anything else is INVALID_ARGUMENT (400)
// naming the header: nine digits or more, no unit, a unit of another case, a sign,
// a space or a fraction, an empty value (net/http trims the spaces around a
// value, RFC 9110 section 5.5: " 60S" is "60S"), and the header twice. The gateway read any number of digits, so "123456789S"
// ran with a deadline of almost four years. Every unit with a deadline long enough
// for the plan is answered.
func TestGrpcTimeoutHeaderFollowsTheSpec(t *testing.T) {
	d, _ := startServing(t)
	client := http.Client{Timeout: 60 * time.Second}
	call := func(vs ...string) (int, string) {
		req, err := http.NewRequest(http.MethodPost, "http://"+d.httpAddr+"/v1/plans:estimate", strings.NewReader(okPlan))
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range vs {
			req.Header.Add("Grpc-Timeout", v)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, v := range []string{"60S", "2M", "1H", "60000m", "60000000u", "99999999S", "00000060S"} {
		if code, b := call(v); code != http.StatusOK {
			t.Errorf("Grpc-Timeout %q: HTTP %d %.300s, want 200", v, code, b)
		}
	}
	for _, v := range []string{"123456789S", "0000000060S", "999999999999999999999H", "60", "12345678", "S", "60s", "60h", "60x",
		"+60S", "-60S", "60 S", "", "6.0S", "60SS", "1e3S", "６０S"} {
		code, b := call(v)
		if code != http.StatusBadRequest || !strings.Contains(b, `"code":3`) || !strings.Contains(b, `"field":"Grpc-Timeout"`) {
			t.Errorf("Grpc-Timeout %q: HTTP %d %.300s, want 400 INVALID_ARGUMENT naming Grpc-Timeout", v, code, b)
		}
	}
	if code, b := call("60S", "1S"); code != http.StatusBadRequest || !strings.Contains(b, `"field":"Grpc-Timeout"`) {
		t.Errorf("Grpc-Timeout twice: HTTP %d %.300s, want 400 INVALID_ARGUMENT naming Grpc-Timeout", code, b)
	}
}

// The gRPC port refuses a grpc-timeout of more than 8 digits too, before any of
// the service's code runs (grpc-go's transport, internal/transport/http_util.go
// decodeTimeout): the call is not run under a deadline of years. grpc-go answers
// INTERNAL ("malformed grpc-timeout"), its own code, which no server option
// changes; the test pins that it is refused and named.
func TestGRPCPortRefusesLongGrpcTimeout(t *testing.T) {
	d, _ := startServing(t)
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	client := http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{Protocols: &p}}
	msg, err := proto.Marshal(plannerRequest())
	if err != nil {
		t.Fatal(err)
	}
	frame := append([]byte{0, 0, 0, 0, 0}, msg...)
	binary.BigEndian.PutUint32(frame[1:5], uint32(len(msg)))
	for _, v := range []string{"123456789S", "0000000060S"} {
		req, err := http.NewRequest(http.MethodPost, "http://"+d.grpcAddr+"/stepcost.v1.StepcostService/EstimatePlan", bytes.NewReader(frame))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/grpc")
		req.Header.Set("Te", "trailers")
		req.Header.Set("Grpc-Timeout", v)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		status := resp.Header.Get("Grpc-Status") + resp.Trailer.Get("Grpc-Status")
		message := resp.Header.Get("Grpc-Message") + resp.Trailer.Get("Grpc-Message")
		if status == "" || status == "0" || !strings.Contains(message, "grpc-timeout") {
			t.Errorf("grpc-timeout %q on the gRPC port: grpc-status %q %q, want a refusal naming grpc-timeout", v, status, message)
		}
	}
}
