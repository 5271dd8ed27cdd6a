package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/nmauth/nmauth"
)

func newLogger(w io.Writer, json bool, level slog.Level) *slog.Logger {
	opts := &slog.HandlerOptions{Level: level}
	if json {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// auditLogger turns the library's audit events into log lines, logged
// with the context of the request that caused them. An Event holds no
// secret and prints as a group of its fields, the client among them.
// A right host or node login is logged at debug: a fleet makes one per
// host every few minutes, and the metrics count them; every other event,
// a failed login among them, is logged at info.
func auditLogger(log *slog.Logger) func(context.Context, nmauth.Event) {
	return func(ctx context.Context, e nmauth.Event) {
		level := slog.LevelInfo
		if e.Type == nmauth.EventLoginSucceeded && (e.Kind == nmauth.KindHost || e.Kind == nmauth.KindNode) {
			level = slog.LevelDebug
		}
		// Asked first, so that a line not written costs no Attr.
		if !log.Enabled(ctx, level) {
			return
		}
		log.LogAttrs(ctx, level, "audit", slog.Any("event", e))
	}
}

// maxLoggedPath bounds the path written to a request line.
const maxLoggedPath = 256

// logRequests writes one line per request (with --access-log). It logs the method, the path
// without its query, the status, the duration and the remote address:
// never a header or a body, which carry passwords, codes and tokens.
func logRequests(log *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w}
		next.ServeHTTP(rec, r)
		path := r.URL.Path
		if len(path) > maxLoggedPath {
			path = path[:maxLoggedPath] + "..."
		}
		log.LogAttrs(r.Context(), slog.LevelInfo, "request",
			slog.String("method", r.Method),
			slog.String("path", path),
			slog.Int("status", rec.statusCode()),
			slog.Duration("duration", time.Since(start)),
			slog.String("remote", r.RemoteAddr))
	})
}

// statusRecorder remembers the status a handler wrote.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the real writer.
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

func (s *statusRecorder) statusCode() int {
	if s.status == 0 {
		return http.StatusOK
	}
	return s.status
}
