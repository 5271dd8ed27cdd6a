package main

import (
	"bytes"
	"github.com/nmauth/nmauth"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"golang.org/x/net/html"
)

// wantPageCSP is the policy the page must be served with, spelled out here
// rather than taken from the code under test.
const wantPageCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'"

func newPageServer(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(newMux(newTestAuthenticator(t), nmauth.WireSpec))
	t.Cleanup(srv.Close)
	return srv
}

// noRedirects sees the first answer, as a browser's address bar would
// before following it.
var noRedirects = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func fetchPath(t *testing.T, method, target string) reply {
	t.Helper()
	req, err := http.NewRequest(method, target, nil)
	if err != nil {
		t.Fatal(err)
	}
	return doRequest(t, req)
}

// doRequest sends req without following redirects and reads the answer.
func doRequest(t *testing.T, req *http.Request) reply {
	t.Helper()
	resp, err := noRedirects.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	var body bytes.Buffer
	body.ReadFrom(resp.Body)
	return reply{status: resp.StatusCode, header: resp.Header, body: body.Bytes()}
}

// TestPageServed checks the page and its assets: status, content type and
// the security headers on each.
func TestPageServed(t *testing.T) {
	srv := newPageServer(t)
	cases := []struct {
		path, contentType, bodyHas string
	}{
		{"/", "text/html; charset=utf-8", "<!doctype html>"},
		{"/assets/app.js", "text/javascript; charset=utf-8", `"use strict";`},
		{"/assets/style.css", "text/css; charset=utf-8", ":root {"},
	}
	for _, tc := range cases {
		t.Run(tc.path, func(t *testing.T) {
			r := fetchPath(t, "GET", srv.URL+tc.path)
			if r.status != http.StatusOK {
				t.Fatalf("status %d, want 200", r.status)
			}
			for name, want := range map[string]string{
				"Content-Type":            tc.contentType,
				"Content-Security-Policy": wantPageCSP,
				"X-Content-Type-Options":  "nosniff",
				"Referrer-Policy":         "no-referrer",
				"Cache-Control":           "no-store",
			} {
				if got := r.header.Values(name); len(got) != 1 || got[0] != want {
					t.Errorf("%s: %q, want exactly %q", name, got, want)
				}
			}
			if !bytes.Contains(r.body, []byte(tc.bodyHas)) {
				t.Errorf("body lacks %q", tc.bodyHas)
			}
		})
	}
}

// TestPageOnlyAtRoot checks that no other method or path serves the page
// or lists the embedded files.
func TestPageOnlyAtRoot(t *testing.T) {
	srv := newPageServer(t)
	cases := []struct {
		method, path string
		status       int
	}{
		{"POST", "/", http.StatusMethodNotAllowed},
		{"PUT", "/", http.StatusMethodNotAllowed},
		{"DELETE", "/", http.StatusMethodNotAllowed},
		{"POST", "/assets/app.js", http.StatusMethodNotAllowed},
		{"GET", "/index.html", http.StatusNotFound},
		{"GET", "/web/index.html", http.StatusNotFound},
		{"GET", "/nope", http.StatusNotFound},
		{"GET", "/assets/", http.StatusNotFound},
		{"GET", "/assets/index.html", http.StatusNotFound},
		{"GET", "/assets/web/app.js", http.StatusNotFound},
		{"GET", "/assets/app.js/", http.StatusNotFound},
		{"GET", "/assets/%2e%2e/web/index.html", http.StatusNotFound},
		{"GET", "/api/", http.StatusNotFound},
	}
	for _, tc := range cases {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			r := fetchPath(t, tc.method, srv.URL+tc.path)
			if r.status != tc.status {
				t.Errorf("status %d, want %d", r.status, tc.status)
			}
			if bytes.Contains(bytes.ToLower(r.body), []byte("<!doctype html>")) {
				t.Errorf("the page was served:\n%.200s", r.body)
			}
		})
	}
}

// TestPageHasNoInlineOrForeignContent parses the page: its script and
// style come from this server and are served, nothing is inline that the
// policy would block, every input has a label and every button a text.
func TestPageHasNoInlineOrForeignContent(t *testing.T) {
	srv := newPageServer(t)
	r := fetchPath(t, "GET", srv.URL+"/")
	doc, err := html.Parse(bytes.NewReader(r.body))
	if err != nil {
		t.Fatal(err)
	}
	labels := map[string]bool{}
	var inputs []string
	var loads []string // what the page loads from this server
	var liveRegion bool
	for n := range doc.Descendants() {
		if n.Type != html.ElementNode {
			continue
		}
		checkAttributes(t, n)
		switch n.Data {
		case "script":
			if n.FirstChild != nil || attr(n, "src") == "" {
				t.Errorf("inline script: %s", render(n))
			}
			loads = append(loads, attr(n, "src"))
		case "style":
			t.Errorf("inline style element: %s", render(n))
		case "link":
			if attr(n, "rel") == "stylesheet" {
				loads = append(loads, attr(n, "href"))
			}
		case "label":
			labels[attr(n, "for")] = true
		case "input", "select", "textarea":
			inputs = append(inputs, attr(n, "id"))
		case "button":
			if strings.TrimSpace(textOf(n)) == "" {
				t.Errorf("button without text: %s", render(n))
			}
		}
		if attr(n, "aria-live") != "" {
			liveRegion = true
		}
	}
	if len(loads) != 2 {
		t.Errorf("the page loads %q, want one script and one stylesheet", loads)
	}
	for _, path := range loads {
		if r := fetchPath(t, "GET", srv.URL+path); r.status != http.StatusOK {
			t.Errorf("the page loads %s, which answers %d", path, r.status)
		}
	}
	if !liveRegion {
		t.Error("no aria-live region for the status")
	}
	for _, id := range inputs {
		if id == "" || !labels[id] {
			t.Errorf("input %q has no label", id)
		}
	}
}

// urlAttributes are the attributes that make a browser load or send to a URL.
var urlAttributes = map[string]bool{
	"src": true, "href": true, "action": true, "formaction": true, "srcset": true,
	"poster": true, "data": true, "manifest": true, "ping": true, "background": true,
}

// checkAttributes fails on an inline style or event handler, and on a URL
// that leaves this server other than a data: URL.
func checkAttributes(t *testing.T, n *html.Node) {
	t.Helper()
	for _, a := range n.Attr {
		name := strings.ToLower(a.Key)
		switch {
		case name == "style":
			t.Errorf("inline style attribute on <%s>", n.Data)
		case strings.HasPrefix(name, "on"):
			t.Errorf("inline event handler %s on <%s>", name, n.Data)
		case urlAttributes[name]:
			u, err := url.Parse(strings.TrimSpace(a.Val))
			if err != nil || u.Host != "" || (u.Scheme != "" && u.Scheme != "data") {
				t.Errorf("<%s %s=%q> points outside this server", n.Data, name, a.Val)
			}
		}
	}
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func textOf(n *html.Node) string {
	var b strings.Builder
	for d := range n.Descendants() {
		if d.Type == html.TextNode {
			b.WriteString(d.Data)
		}
	}
	return b.String()
}

func render(n *html.Node) string {
	var b strings.Builder
	html.Render(&b, n)
	return b.String()
}

// TestPageScriptKeepsTokenInMemory checks the script's source for the ways
// a token could outlive the tab or data could become markup.
func TestPageScriptKeepsTokenInMemory(t *testing.T) {
	srv := newPageServer(t)
	js := string(fetchPath(t, "GET", srv.URL+"/assets/app.js").body)
	for _, banned := range []string{"localStorage", "sessionStorage", "document.cookie", "indexedDB", "innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("} {
		if strings.Contains(js, banned) {
			t.Errorf("app.js uses %s", banned)
		}
	}
}
