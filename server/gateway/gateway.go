// Package gateway is the daemon's REST gateway: the generated handlers
// (stepcostv1gw) over a gRPC connection to the daemon's own server through an
// in-process listener, strict JSON decoding whose errors name the field at fault,
// and the HTTP answers to errors and unrouted requests.
package gateway

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strings"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/genproto/googleapis/api/httpbody"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/stepcost/stepcost/internal/wire"
	gw "github.com/stepcost/stepcost/proto/stepcost/v1/stepcostv1gw"
)

// maxHeaderList bounds the headers and trailers of one call on the gateway's
// connection (gRPC's default is 16 MiB, and over it the connection is lost).
const maxHeaderList = 1 << 20

// New is the REST gateway, a gRPC client of the daemon through lis (so that every
// interceptor applies to REST calls, and no TLS of its own is needed: see
// InProcess), with opts added to its connection; the connection is the caller's to
// close. /healthz answers from the health service.
func New(ctx context.Context, lis *InProcess, opts ...grpc.DialOption) (*grpc.ClientConn, *runtime.ServeMux, error) {
	conn, err := grpc.NewClient(lis.Target(), append([]grpc.DialOption{
		grpc.WithContextDialer(lis.Dial),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64 << 20)),
		// Advertised to the server, which then refuses (resets) one call whose
		// headers or trailers would be larger, instead of sending them and having
		// this end close the connection every REST call shares. Error answers are
		// bounded far below it (package bounded).
		grpc.WithMaxHeaderListSize(maxHeaderList),
	}, opts...)...)
	if err != nil {
		return nil, nil, err
	}
	var mux *runtime.ServeMux
	mux = runtime.NewServeMux(
		runtime.WithMiddlewares(bodyOnly(&mux)),
		// A google.api.HttpBody answer (the pictures) is written as its own body and
		// media type; everything else as JSON.
		runtime.WithMarshalerOption(runtime.MIMEWildcard, &runtime.HTTPBodyMarshaler{Marshaler: withFieldErrors(&runtime.JSONPb{
			MarshalOptions:   wire.JSONOptions(),
			UnmarshalOptions: protojson.UnmarshalOptions{DiscardUnknown: false},
		})}),
		runtime.WithForwardResponseOption(bodyHeaders),
		runtime.WithErrorHandler(restErrors),
		runtime.WithRoutingErrorHandler(restRoutingErrors),
		runtime.WithHealthzEndpoint(healthpb.NewHealthClient(conn)),
	)
	// HEAD on a GET path is answered as GET without the body (RFC 9110 section
	// 9.3.2; net/http drops what the handler writes): the gateway routes no HEAD,
	// and answered 405, also to a probe's HEAD /healthz.
	for _, p := range getPaths {
		if err := mux.HandlePath(http.MethodHead, p, func(w http.ResponseWriter, r *http.Request, _ map[string]string) {
			get := r.Clone(r.Context())
			get.Method = http.MethodGet
			mux.ServeHTTP(w, get)
		}); err != nil {
			conn.Close()
			return nil, nil, err
		}
	}
	if err := gw.RegisterStepcostServiceHandler(ctx, mux, conn); err != nil {
		conn.Close()
		return nil, nil, err
	}
	if err := gw.RegisterPictureServiceHandler(ctx, mux, conn); err != nil {
		conn.Close()
		return nil, nil, err
	}
	return conn, mux, nil
}

// pictureCSP forbids everything an SVG answer could load or run: it is data to be
// shown, never a document with scripts.
const pictureCSP = "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'"

// bodyHeaders sets the headers of a raw body answer (a picture): it must not be
// sniffed as another type, run anything, or be kept by caches.
func bodyHeaders(_ context.Context, w http.ResponseWriter, m proto.Message) error {
	if _, ok := m.(*httpbody.HttpBody); ok {
		h := w.Header()
		h.Set("Content-Security-Policy", pictureCSP)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Cache-Control", "no-store")
	}
	return nil
}

// bodyOnly refuses, on the API's routes (/v1/…), what the gateway would otherwise
// drop without a word: a query parameter (no route reads one: the request is the
// body, and ListCatalog takes none) and a body under a Content-Encoding, which the
// gateway does not decode (gzip was refused as malformed JSON, a plain body
// labelled br was read as if unlabelled). /healthz keeps its ?service=.
func bodyOnly(mux **runtime.ServeMux) runtime.Middleware {
	return func(next runtime.HandlerFunc) runtime.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request, params map[string]string) {
			if !strings.HasPrefix(r.URL.Path, "/v1/") {
				next(w, r, params)
				return
			}
			var e *decodeError
			httpStatus := http.StatusBadRequest
			if ts := r.Header.Values("Grpc-Timeout"); len(ts) > 1 || len(ts) == 1 && !grpcTimeout.MatchString(ts[0]) {
				// The gateway read any number of digits ("123456789S" ran with a
				// deadline of almost four years) and answered other malformed
				// values with a message naming no field.
				e = &decodeError{code: codes.InvalidArgument, field: "Grpc-Timeout",
					rule: fmt.Sprintf("must be 1 to 8 digits then a unit, H, M, S, m, u or n (gRPC over HTTP/2), given once (got %q)", strings.Join(ts, ", "))}
			} else if t := r.Header.Get("Grpc-Timeout"); zeroTimeout.MatchString(t) {
				// The gateway reads a timeout of 0 as none (runtime.AnnotateContext
				// sets a deadline only for a timeout other than 0), and the call ran
				// under the daemon's default deadline: 0 is a deadline that has
				// passed, as one of a nanosecond is.
				httpStatus = http.StatusGatewayTimeout
				e = &decodeError{code: codes.DeadlineExceeded, field: "Grpc-Timeout",
					rule: fmt.Sprintf("a timeout of %s is a deadline that has passed", t)}
			} else if enc := r.Header.Values("Content-Encoding"); len(enc) > 0 && !identity(enc) {
				w.Header().Set("Accept-Encoding", "identity")
				httpStatus = http.StatusUnsupportedMediaType
				e = &decodeError{code: codes.InvalidArgument, field: "Content-Encoding",
					rule: fmt.Sprintf("the body must be plain JSON: the gateway decodes no content coding (got %q)", strings.Join(enc, ", "))}
			} else if r.URL.RawQuery != "" {
				e = &decodeError{code: codes.InvalidArgument, field: queryParameter(r.URL.RawQuery),
					rule: "is a query parameter, which the API does not read: give the field in the JSON body"}
			}
			if e == nil {
				next(w, r, params)
				return
			}
			_, out := runtime.MarshalerForRequest(*mux, r)
			runtime.DefaultHTTPErrorHandler(r.Context(), *mux, out, w, r,
				&runtime.HTTPStatusError{HTTPStatus: httpStatus, Err: e.status().Err()})
		}
	}
}

// grpcTimeout is a Grpc-Timeout header as gRPC over HTTP/2 spells it
// (grpc/grpc doc/PROTOCOL-HTTP2.md, "Requests": TimeoutValue, a positive integer
// of at most 8 ASCII digits, then TimeoutUnit, H, M, S, m, u or n). grpc-go's
// server refuses a longer value too (internal/transport/http_util.go,
// decodeTimeout: "Spec allows for 8 digits plus the unit").
var grpcTimeout = regexp.MustCompile(`^[0-9]{1,8}[HMSmun]$`)

// zeroTimeout is a Grpc-Timeout header of 0 in any unit (gRPC over HTTP/2:
// TimeoutValue, 1 to 8 digits, then H, M, S, m, u or n).
var zeroTimeout = regexp.MustCompile(`^0{1,8}[HMSmun]$`)

// identity says whether the Content-Encoding values name no coding but identity.
func identity(values []string) bool {
	for _, v := range values {
		for _, c := range strings.Split(v, ",") {
			if c = strings.TrimSpace(c); c != "" && !strings.EqualFold(c, "identity") {
				return false
			}
		}
	}
	return true
}

// queryParameter names the first of a query's parameters (in order of name), or
// the query itself when it does not parse.
func queryParameter(raw string) string {
	q, err := url.ParseQuery(raw)
	if err != nil || len(q) == 0 {
		return "?" + raw
	}
	names := make([]string, 0, len(q))
	for k := range q {
		names = append(names, k)
	}
	sort.Strings(names)
	return names[0]
}
