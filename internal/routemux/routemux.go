// Package routemux builds the mux of nmauth's handler from its routes,
// each a method and an [http.ServeMux] path pattern, so that every request
// gets the handler's own answer: a route's, or, for a known path asked
// with another method, 405 with an Allow header naming the path's
// methods, or, for any other path, 404. It knows nothing of the
// Authenticator or its envelope: its caller writes those two answers.
package routemux

import (
	"net/http"
	"strings"
)

// Route is one route: a method, a path pattern and its handler.
type Route struct {
	method, path string
	handler      http.Handler
}

// Post is the route of POST requests to path.
func Post(path string, h http.Handler) Route { return Route{http.MethodPost, path, h} }

// Get is the route of GET requests to path.
func Get(path string, h http.Handler) Route { return Route{http.MethodGet, path, h} }

// Delete is the route of DELETE requests to path.
func Delete(path string, h http.Handler) Route { return Route{http.MethodDelete, path, h} }

// New returns a mux serving routes. A request to the path of a route with
// none of that path's methods gets an Allow header naming them, in the
// order of routes, and then notAllowed's answer; a request to no route's
// path gets notFound's.
func New(routes []Route, notAllowed, notFound http.HandlerFunc) *http.ServeMux {
	mux := http.NewServeMux()
	allowed := map[string][]string{}
	for _, rt := range routes {
		mux.Handle(rt.method+" "+rt.path, rt.handler)
		allowed[rt.path] = append(allowed[rt.path], rt.method)
	}
	for path, methods := range allowed {
		allow := strings.Join(methods, ", ")
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Allow", allow)
			notAllowed(w, r)
		})
	}
	mux.HandleFunc("/", notFound)
	return mux
}
