package server

import (
	"embed"
	"io/fs"
	"net/http"
)

// The pictures are the API's PictureService, served by the REST gateway like every
// other call (POST /v1/pictures:schedule, :pareto, :calibration; see
// stepcost_http.yaml), so they share its authentication, deadlines, admission,
// recovery and telemetry. GET /ui/ serves a page that asks /v1/catalog,
// /v1/plans:estimate and the pictures.

// uiFiles is the web page: plain HTML, CSS and JavaScript, no build step.
//
//go:embed ui
var uiFiles embed.FS

// uiCSP lets the page load only its own script and style and call only this
// daemon; inline SVG from the pictures endpoints is inserted as parsed nodes.
const uiCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// uiHandlers serves the web page.
func uiHandlers(mux *http.ServeMux) {
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
