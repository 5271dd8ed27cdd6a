package nmauth

import (
	"net/http"
	"slices"
)

// networkScope is the networks an access token is limited to, sorted.
type networkScope struct{ names []string }

// newNetworkScope returns the scope of networks, nil for none (every
// network).
func newNetworkScope(networks []string) *networkScope {
	if len(networks) == 0 {
		return nil
	}
	return &networkScope{names: slices.Clone(networks)}
}

// Networks returns the networks an access token is limited to, nil when
// it is limited to none (and for every other kind of principal).
func (p Principal) Networks() []string {
	if p.networks == nil {
		return nil
	}
	return slices.Clone(p.networks.names)
}

// Permits reports whether p's scope allows a request that writes (or only
// reads, when write is false) in network, "" for a request that names no
// network. The master key, user tokens and host tokens are unscoped; a
// node token is limited to its network; an access token by its scope: a
// read-only one to reads, and one limited to networks to requests naming
// one of them, so it is refused a request that names none.
func (p Principal) Permits(write bool, network string) bool {
	switch p.Kind {
	case KindNode:
		return network == "" || network == p.Network
	case KindAccessToken:
		if write && p.ReadOnly {
			return false
		}
		return p.networks == nil || network != "" && slices.Contains(p.networks.names, network)
	}
	return true
}

// RequireScope returns a middleware that lets a request through only when
// the [Principal] in its context permits it ([Principal.Permits]): a
// request is a write unless its method is GET, HEAD or OPTIONS, and its
// network is what network returns for it (nil for routes that name none).
// It answers 403 otherwise, and 401 to a request with no principal, so
// place it behind [Authenticator.Middleware] or [Authenticator.Require]:
//
//	inNetwork := auth.RequireScope(func(r *http.Request) string { return r.PathValue("network") })
//	mux.Handle("PUT /api/networks/{network}", auth.Middleware(inNetwork(updateNetwork)))
func (a *Authenticator) RequireScope(network func(*http.Request) string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			p, ok := FromContext(r.Context())
			if !ok {
				a.WriteError(w, r, ErrUnauthenticated)
				return
			}
			n := ""
			if network != nil {
				n = network(r)
			}
			if !p.Permits(isWrite(r.Method), n) {
				a.WriteError(w, r, ErrForbidden)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// isWrite reports whether a request with method may change something.
func isWrite(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	return true
}
