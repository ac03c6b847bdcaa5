package server

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"time"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/stepcost/stepcost/internal/wire"
	"github.com/stepcost/stepcost/picture"
	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
	"github.com/stepcost/stepcost/server/gateway"
)

// The pictures endpoints draw what the API answers (package picture renders; this
// file only decodes the request, asks the service and writes the SVG):
//
//	POST /v1/pictures:schedule  body: an EstimateStep request → the layout's pipeline
//	                            schedule above its step breakdown
//	POST /v1/pictures:pareto    body: an EstimatePlan request → the search's Pareto
//	                            front (the answer /v1/plans:estimate gives, from the
//	                            same cache)
//
// and GET /ui/ serves a page that asks /v1/catalog, /v1/plans:estimate and these.
// Bodies are decoded as strictly as the gateway does (unknown fields are a 400),
// bounded by --max-request-bytes, and answered within --default-deadline; with
// bearer tokens on, these endpoints need one as the API does.

// uiFiles is the web page: plain HTML, CSS and JavaScript, no build step.
//
//go:embed ui
var uiFiles embed.FS

// pictureCSP forbids everything an SVG answer could load or run: it is data to be
// shown, never a document with scripts.
const pictureCSP = "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'"

// uiCSP lets the page load only its own script and style and call only this
// daemon; inline SVG from the pictures endpoints is inserted as parsed nodes.
const uiCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// pictureHandlers serves the pictures endpoints with svc, each call bounded by
// deadline. protect wraps what needs a bearer token when tokens are on.
func pictureHandlers(mux *http.ServeMux, svc *Service, deadline time.Duration, protect func(http.Handler) http.Handler, log *slog.Logger) {
	mux.Handle("POST /v1/pictures:schedule", protect(pictureEndpoint(deadline, log, func(ctx context.Context, body []byte) (picture.Figure, error) {
		req := &pb.EstimateStepRequest{}
		if err := gateway.DecodeStrict(body, req); err != nil {
			return picture.Figure{}, err
		}
		return svc.schedulePicture(ctx, req)
	})))
	mux.Handle("POST /v1/pictures:pareto", protect(pictureEndpoint(deadline, log, func(ctx context.Context, body []byte) (picture.Figure, error) {
		req := &pb.EstimatePlanRequest{}
		if err := gateway.DecodeStrict(body, req); err != nil {
			return picture.Figure{}, err
		}
		return svc.paretoPicture(ctx, req)
	})))
	mux.Handle("POST /v1/pictures:calibration", protect(calibrationPicture(svc, deadline, log)))
	static, _ := fs.Sub(uiFiles, "ui") // the directory is embedded: cannot fail
	files := http.StripPrefix("/ui/", http.FileServerFS(static))
	mux.Handle("GET /ui/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", uiCSP)
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Referrer-Policy", "no-referrer")
		files.ServeHTTP(w, r)
	}))
	mux.Handle("GET /ui", http.RedirectHandler("/ui/", http.StatusMovedPermanently))
}

// pictureEndpoint reads the body (the server's MaxBytesHandler bounds it), draws
// and writes the SVG, or a google.rpc.Status-shaped JSON error as the gateway does.
func pictureEndpoint(deadline time.Duration, log *slog.Logger, draw func(context.Context, []byte) (picture.Figure, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if p := recover(); p != nil {
				log.Error("panic", "path", r.URL.Path, "panic", p)
				writeStatus(w, status.New(codes.Internal, "internal error drawing the picture"))
			}
		}()
		body, err := io.ReadAll(r.Body)
		if err != nil {
			var tooLarge *http.MaxBytesError
			if errors.As(err, &tooLarge) {
				// As the gateway answers an oversized body: 413, not a retry signal.
				writeStatusHTTP(w, http.StatusRequestEntityTooLarge,
					status.Newf(codes.ResourceExhausted, "request body: larger than the service's limit of %d bytes (flag --max-request-bytes)", tooLarge.Limit))
				return
			}
			writeStatus(w, status.Newf(codes.InvalidArgument, "request body: %v", err))
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), deadline)
		defer cancel()
		fig, err := draw(ctx, body)
		if err != nil {
			writeStatus(w, status.Convert(toStatus(err)))
			return
		}
		w.Header().Set("Content-Type", "image/svg+xml")
		w.Header().Set("Content-Security-Policy", pictureCSP)
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Cache-Control", "no-store")
		w.Write(fig.SVG())
	})
}

// writeStatus writes an error as the REST gateway's JSON (code, message, details).
func writeStatus(w http.ResponseWriter, st *status.Status) {
	writeStatusHTTP(w, runtime.HTTPStatusFromCode(st.Code()), st)
}

func writeStatusHTTP(w http.ResponseWriter, code int, st *status.Status) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	b, err := protojson.Marshal(st.Proto())
	if err != nil {
		b, _ = json.Marshal(map[string]any{"code": st.Code(), "message": st.Message()})
	}
	w.Write(b)
}

// schedulePicture estimates one layout as EstimateStep does and draws its pipeline
// schedule above its breakdown.
func (s *Service) schedulePicture(ctx context.Context, req *pb.EstimateStepRequest) (picture.Figure, error) {
	st, err := wire.ResolveStep(s.clusters, req, s.limits.MaxGPUs)
	if err != nil {
		return picture.Figure{}, err
	}
	res, err := st.Result(ctx)
	if err != nil {
		return picture.Figure{}, err
	}
	title := fmt.Sprintf("%s on %s", st.Model.Name, st.Cluster.Cluster.Spec.Name)
	sched, err := picture.Schedule(res, title)
	if err != nil {
		return picture.Figure{}, status.Error(codes.InvalidArgument, err.Error())
	}
	return picture.Stack(sched, picture.Breakdown(res, title)), nil
}

// paretoPicture runs (or finds in the cache) the EstimatePlan answer and draws its
// plans: the top plans and the Pareto front.
func (s *Service) paretoPicture(ctx context.Context, req *pb.EstimatePlanRequest) (picture.Figure, error) {
	resp, err := s.EstimatePlan(ctx, req)
	if err != nil {
		return picture.Figure{}, err
	}
	if len(resp.GetPlans()) == 0 {
		return picture.Figure{}, status.Error(codes.FailedPrecondition, "no feasible plan to draw: every layout was pruned")
	}
	f := picture.Front{Title: fmt.Sprintf("%s on %s", resp.GetModel().GetName(), clusterName(req.GetCluster())),
		Evaluated: int(resp.GetStats().GetEvaluated())}
	add := func(p *pb.Plan, onFront bool) {
		l, err := wire.LayoutFromProto(p.GetLayout())
		label := "?"
		if err == nil {
			label = picture.LayoutLabel(l)
		}
		e := p.GetEstimate()
		f.Candidates = append(f.Candidates, picture.Candidate{Label: label, GPUs: int(p.GetGpus()), StepTime: e.GetStepTimeS(),
			MemoryGB: e.GetMemory().GetTotalGb(), CapacityGB: e.GetMemory().GetCapacityGb(), Rank: int(p.GetRank()),
			OnFront: onFront, Dominated: p.GetDominated()})
	}
	// A plan both in the top plans and on the front is drawn once, highlighted.
	onFront := map[string]bool{}
	key := func(p *pb.Plan) string {
		return fmt.Sprint(p.GetGpus(), "|", p.GetEstimate().GetStepTimeS(), "|", p.GetEstimate().GetMemory().GetTotalGb(), "|", p.GetLayout().String())
	}
	for _, p := range resp.GetPareto() {
		onFront[key(p)] = true
	}
	seen := map[string]bool{}
	for _, p := range resp.GetPlans() {
		seen[key(p)] = true
		add(p, onFront[key(p)])
	}
	for _, p := range resp.GetPareto() {
		if !seen[key(p)] {
			add(p, true)
			f.Candidates[len(f.Candidates)-1].Rank = 0
		}
	}
	return picture.Pareto(f)
}

// clusterName is a cluster's catalog name, or its definition's name.
func clusterName(c *pb.ClusterSpec) string {
	if n := c.GetName(); n != "" {
		return n
	}
	if n := c.GetDefinition().GetName(); n != "" {
		return n
	}
	return "a custom cluster"
}
