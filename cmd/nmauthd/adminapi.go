package main

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/nmauth/nmauth"
)

// The pages of GET /api/admin/users and GET /api/admin/hosts hold
// defaultAdminPage accounts unless ?limit= asks for 1 to maxAdminPage.
const (
	defaultAdminPage = 50
	maxAdminPage     = 200
	// maxCursor bounds ?after=: no user name or host id is longer.
	maxCursor = 256
)

// userSummary is what the admin view shows of a user: no hash, sealed
// secret or recovery-code hash ever leaves the server.
type userSummary struct {
	Name              string     `json:"name"`
	Disabled          bool       `json:"disabled"`
	TOTP              bool       `json:"totp"`
	RecoveryCodesLeft int        `json:"recoveryCodesLeft"`
	LockedUntil       *time.Time `json:"lockedUntil,omitempty"`
	// Broken names the columns of the record the store cannot decode;
	// nmauthd check --repair mends them.
	Broken []string `json:"broken,omitempty"`
}

// hostSummary is what the admin view shows of a host.
type hostSummary struct {
	ID          string     `json:"id"`
	MACAddress  string     `json:"macaddress,omitempty"`
	Disabled    bool       `json:"disabled"`
	LockedUntil *time.Time `json:"lockedUntil,omitempty"`
	Broken      []string   `json:"broken,omitempty"`
}

// adminPage is one page of a listing; Next, when not empty, is the after
// of the next page.
type adminPage[T any] struct {
	Items []T    `json:"items"`
	Next  string `json:"next,omitempty"`
}

// addAdminRoutes adds the admin API, for the master key only: pages of
// users and hosts without their secrets, and disable, enable and TOTP
// reset, all made through auth, which keeps its store deadline, revokes the
// account's tokens and keeps its caches right.
func addAdminRoutes(mux *http.ServeMux, auth *nmauth.Authenticator, log *slog.Logger) {
	a := &adminAPI{auth: auth, log: log}
	handle := func(pattern string, h http.HandlerFunc) {
		mux.Handle(pattern, auth.Middleware(a.masterOnly(h)))
	}
	handle("GET /api/admin/users", a.listUsers)
	handle("GET /api/admin/hosts", a.listHosts)
	handle("POST /api/admin/users/{username}/disable", a.userAction("user disabled", auth.Admin().DisableUser))
	handle("POST /api/admin/users/{username}/enable", a.userAction("user enabled", auth.Admin().EnableUser))
	handle("POST /api/admin/users/{username}/totp-reset", a.userAction("TOTP reset", auth.Admin().ResetTOTP))
	handle("POST /api/admin/hosts/{id}/disable", a.hostAction("host disabled", auth.Admin().DisableHost))
	handle("POST /api/admin/hosts/{id}/enable", a.hostAction("host enabled", auth.Admin().EnableHost))
}

type adminAPI struct {
	auth *nmauth.Authenticator
	log  *slog.Logger
}

// masterOnly lets only the master key through; Middleware has already
// answered 401 to a request without a valid bearer.
func (a *adminAPI) masterOnly(next http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p, ok := nmauth.FromContext(r.Context()); !ok || p.Kind != nmauth.KindMaster {
			a.writeError(w, r, http.StatusForbidden, "the admin routes need the master key")
			return
		}
		next(w, r)
	})
}

// pageQuery reads ?after= and ?limit=, or answers 400 and returns false.
func (a *adminAPI) pageQuery(w http.ResponseWriter, r *http.Request) (after string, limit int, ok bool) {
	q := r.URL.Query()
	after, limit = q.Get("after"), defaultAdminPage
	if len(after) > maxCursor {
		a.writeError(w, r, http.StatusBadRequest, "after is too long")
		return "", 0, false
	}
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > maxAdminPage {
			a.writeError(w, r, http.StatusBadRequest, "limit must be a whole number from 1 to "+strconv.Itoa(maxAdminPage))
			return "", 0, false
		}
		limit = n
	}
	return after, limit, true
}

func (a *adminAPI) listUsers(w http.ResponseWriter, r *http.Request) {
	after, limit, ok := a.pageQuery(w, r)
	if !ok {
		return
	}
	// One more than the page tells whether there is a next page.
	users, err := a.auth.Admin().ListUsers(r.Context(), after, limit+1)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	page := adminPage[userSummary]{Items: []userSummary{}}
	for i, u := range users {
		if i == limit {
			page.Next = users[limit-1].Name
			break
		}
		page.Items = append(page.Items, userSummary{
			Name:              u.Name,
			Disabled:          u.Disabled,
			TOTP:              u.TOTPEnabled,
			RecoveryCodesLeft: u.RecoveryCodesLeft,
			LockedUntil:       optionalTime(u.LockedUntil),
			Broken:            u.Broken,
		})
	}
	writeAdminJSON(w, page)
}

func (a *adminAPI) listHosts(w http.ResponseWriter, r *http.Request) {
	after, limit, ok := a.pageQuery(w, r)
	if !ok {
		return
	}
	hosts, err := a.auth.Admin().ListHosts(r.Context(), after, limit+1)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	page := adminPage[hostSummary]{Items: []hostSummary{}}
	for i, h := range hosts {
		if i == limit {
			page.Next = hosts[limit-1].ID
			break
		}
		page.Items = append(page.Items, hostSummary{
			ID:          h.ID,
			MACAddress:  h.MACAddress,
			Disabled:    h.Disabled,
			LockedUntil: optionalTime(h.LockedUntil),
			Broken:      h.Broken,
		})
	}
	writeAdminJSON(w, page)
}

// optionalTime is t in UTC, or nil for the zero time, which the JSON
// answer leaves out.
func optionalTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.UTC()
	return &t
}

// userAction answers a change of the user named in the path.
func (a *adminAPI) userAction(done string, change func(context.Context, string) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		a.act(w, r, done, change(r.Context(), r.PathValue("username")))
	}
}

// hostAction answers a change of the host whose id is in the path.
func (a *adminAPI) hostAction(done string, change func(context.Context, string) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		a.act(w, r, done, change(r.Context(), r.PathValue("id")))
	}
}

func (a *adminAPI) act(w http.ResponseWriter, r *http.Request, done string, err error) {
	if err != nil {
		a.fail(w, r, err)
		return
	}
	a.auth.WriteResponse(w, r, http.StatusOK, done, nil)
}

// fail answers the error of a listing or a change: 400 for a malformed
// name, 404 for an unknown account, 503 while the store is unreachable,
// and 500, with the detail in the log only, for anything else.
func (a *adminAPI) fail(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, nmauth.ErrInvalidUsername):
		a.writeError(w, r, http.StatusBadRequest, "invalid username")
	case errors.Is(err, nmauth.ErrInvalidHost):
		a.writeError(w, r, http.StatusBadRequest, "invalid host id")
	case errors.Is(err, nmauth.ErrNotFound):
		a.writeError(w, r, http.StatusNotFound, "no such account")
	case errors.Is(err, nmauth.ErrStoreUnavailable), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		w.Header().Set("Retry-After", "1")
		a.writeError(w, r, http.StatusServiceUnavailable, "service unavailable, try again later")
	default:
		// The route's pattern, not its path, which holds the account's name.
		a.log.LogAttrs(r.Context(), slog.LevelError, "admin request failed",
			slog.String("route", r.Pattern), slog.String("err", err.Error()))
		a.writeError(w, r, http.StatusInternalServerError, "internal error")
	}
}

// writeError answers an error in the envelope of the Authenticator's wire
// profile, as the library's own errors and the 401 of its middleware are.
// It is the one place the admin routes write an error.
func (a *adminAPI) writeError(w http.ResponseWriter, r *http.Request, status int, message string) {
	a.auth.WriteResponse(w, r, status, message, nil)
}

// writeAdminJSON answers a listing, a JSON object of its own in both
// profiles.
func writeAdminJSON(w http.ResponseWriter, v any) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	json.NewEncoder(w).Encode(v)
}
