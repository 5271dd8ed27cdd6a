package main

import (
	"embed"
	"net/http"
)

// webFiles is the demo page: plain files, served as they are, so that there
// is no build step and nothing is fetched from elsewhere.
//
//go:embed web/index.html web/app.js web/style.css
var webFiles embed.FS

// pageCSP lets the page load only its own script and style, talk only to
// this server, and show the QR code's data: URL. Inline script and style
// are refused, so that text the page shows can never run.
const pageCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'"

// pageHeaders sets the headers of every answer under the page's routes.
func pageHeaders(h http.Header) {
	h.Set("Content-Security-Policy", pageCSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
}

// webAsset is one embedded file and its content type.
type webAsset struct {
	contentType string
	body        []byte
}

func mustAsset(name, contentType string) webAsset {
	b, err := webFiles.ReadFile("web/" + name)
	if err != nil {
		panic(err) // the embed directive above guarantees the file
	}
	return webAsset{contentType: contentType, body: b}
}

// The page at GET / and its two assets under GET /assets/.
var (
	pageHTML   = mustAsset("index.html", "text/html; charset=utf-8")
	pageAssets = map[string]webAsset{
		"/assets/app.js":    mustAsset("app.js", "text/javascript; charset=utf-8"),
		"/assets/style.css": mustAsset("style.css", "text/css; charset=utf-8"),
	}
)

// servePage answers GET / with the demo page.
func servePage(w http.ResponseWriter, _ *http.Request) {
	writeAsset(w, pageHTML)
}

// serveAsset answers GET /assets/... with the page's script or style, and
// 404 for any other name: no directory listing, no file system.
func serveAsset(w http.ResponseWriter, r *http.Request) {
	a, ok := pageAssets[r.URL.Path]
	if !ok {
		pageHeaders(w.Header())
		http.NotFound(w, r)
		return
	}
	writeAsset(w, a)
}

func writeAsset(w http.ResponseWriter, a webAsset) {
	h := w.Header()
	pageHeaders(h)
	h.Set("Content-Type", a.contentType)
	w.Write(a.body)
}
