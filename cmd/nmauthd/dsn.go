package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// envDB gives the database when no --db is given, so that a DSN and its
// password stay off the command line, which ps shows to every user.
const envDB = "NMAUTH_DB"

// resolveDB takes --db from NMAUTH_DB when the flag is not given.
func resolveDB(o *options, getenv func(string) string) {
	if v := getenv(envDB); v != "" && !o.set["db"] {
		o.db = v
	}
}

// keyValueDSN is how a libpq key=value DSN starts ("host=db user=…"). A
// SQLite path with '=' in its first name is written ./name.
var keyValueDSN = regexp.MustCompile(`^\s*[A-Za-z_][A-Za-z0-9_]*\s*=`)

// isPostgresDSN reports whether --db names PostgreSQL: a postgres:// or
// postgresql:// URL, or a key=value DSN. Anything else is a SQLite path.
func isPostgresDSN(s string) bool {
	l := strings.ToLower(s)
	return strings.HasPrefix(l, "postgres://") || strings.HasPrefix(l, "postgresql://") || keyValueDSN.MatchString(s)
}

// postgresConfig parses a PostgreSQL DSN as pgx does, with the PG*
// variables and .pgpass, and returns the DSN's name without secrets:
// postgres://user@host:port/database.
func postgresConfig(dsn string) (string, error) {
	cfg, err := pgconn.ParseConfig(dsn)
	if err != nil {
		// The error quotes the DSN; its cause alone names what is wrong.
		why := "malformed"
		if cause := errors.Unwrap(err); cause != nil {
			why += ": " + cause.Error()
		}
		return "", fmt.Errorf("--db: the PostgreSQL DSN does not parse (%s)", why)
	}
	return fmt.Sprintf("postgres://%s@%s/%s", cfg.User, net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port))), cfg.Database), nil
}

// redactor replaces the secrets of a PostgreSQL DSN, wherever they occur
// in a log line or an error, with xxxxx.
type redactor struct{ secrets []string }

const redacted = "xxxxx"

// newRedactor collects the secrets of dsn: the password of its URL's user
// information, its password= and sslpassword= (the client key's
// passphrase), in a URL's query or as key=value, the PGPASSWORD and
// PGSSLPASSWORD that pgx reads, the password pgx finds in .pgpass, and
// the DSN itself. A SQLite path has none.
func newRedactor(dsn string, getenv func(string) string) *redactor {
	if !isPostgresDSN(dsn) {
		return &redactor{}
	}
	secrets := []string{dsn, getenv("PGPASSWORD"), getenv("PGSSLPASSWORD")}
	if keyValueDSN.MatchString(dsn) {
		kv := parseKeyValueDSN(dsn)
		secrets = append(secrets, kv["password"], kv["sslpassword"])
	} else if u, err := url.Parse(dsn); err == nil {
		pw, _ := u.User.Password()
		q := u.Query()
		secrets = append(secrets, pw)
		secrets = append(secrets, q["password"]...)
		secrets = append(secrets, q["sslpassword"]...)
	}
	if cfg, err := pgconn.ParseConfig(dsn); err == nil {
		secrets = append(secrets, cfg.Password)
	}
	r := &redactor{}
	for _, s := range secrets {
		if s == "" {
			continue
		}
		// As the DSN spells it, too, escaped in a URL.
		r.secrets = append(r.secrets, s, url.QueryEscape(s), url.PathEscape(s))
	}
	// The longest first, so that a secret inside another goes with it.
	slices.SortFunc(r.secrets, func(a, b string) int { return len(b) - len(a) })
	r.secrets = slices.Compact(r.secrets)
	return r
}

// merge adds the secrets of o to r, so that one redactor covers both
// databases of a command that reads one and writes another.
func (r *redactor) merge(o *redactor) {
	r.secrets = append(r.secrets, o.secrets...)
	slices.SortFunc(r.secrets, func(a, b string) int { return len(b) - len(a) })
	r.secrets = slices.Compact(r.secrets)
}

// redact returns s with every secret replaced.
func (r *redactor) redact(s string) string {
	for _, secret := range r.secrets {
		s = strings.ReplaceAll(s, secret, redacted)
	}
	return s
}

// line is err's message, secrets replaced, on one line.
func (r *redactor) line(err error) string {
	return strings.Join(strings.Fields(r.redact(err.Error())), " ")
}

// logger returns log with the secrets replaced in every message and
// attribute, errors and values that print as strings included.
func (r *redactor) logger(log *slog.Logger) *slog.Logger {
	if len(r.secrets) == 0 {
		return log
	}
	return slog.New(&redactingHandler{next: log.Handler(), r: r})
}

type redactingHandler struct {
	next slog.Handler
	r    *redactor
}

func (h *redactingHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.next.Enabled(ctx, l)
}

func (h *redactingHandler) Handle(ctx context.Context, rec slog.Record) error {
	out := slog.NewRecord(rec.Time, rec.Level, h.r.redact(rec.Message), rec.PC)
	rec.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.attr(a))
		return true
	})
	return h.next.Handle(ctx, out)
}

func (h *redactingHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	clean := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		clean[i] = h.attr(a)
	}
	return &redactingHandler{next: h.next.WithAttrs(clean), r: h.r}
}

func (h *redactingHandler) WithGroup(name string) slog.Handler {
	return &redactingHandler{next: h.next.WithGroup(name), r: h.r}
}

// attr is a with the secrets replaced in its value. A value other than a
// string or group is left as it is unless its printed form holds a
// secret; then it becomes that form, redacted.
func (h *redactingHandler) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, h.r.redact(v.String()))
	case slog.KindGroup:
		group := v.Group()
		clean := make([]slog.Attr, len(group))
		for i, g := range group {
			clean[i] = h.attr(g)
		}
		return slog.Attr{Key: a.Key, Value: slog.GroupValue(clean...)}
	}
	var s string
	if err, ok := v.Any().(error); ok {
		s = err.Error()
	} else {
		s = fmt.Sprint(v.Any())
	}
	if r := h.r.redact(s); r != s {
		return slog.String(a.Key, r)
	}
	return slog.Attr{Key: a.Key, Value: v}
}

// parseKeyValueDSN reads a libpq key=value DSN: keys and values separated
// by '=' with optional spaces, a value in single quotes when it holds
// spaces, a backslash escaping the next character.
func parseKeyValueDSN(s string) map[string]string {
	kv := map[string]string{}
	for {
		s = strings.TrimLeft(s, " \t\n\r\f\v")
		if s == "" {
			return kv
		}
		eq := strings.IndexByte(s, '=')
		if eq < 0 {
			return kv
		}
		key := strings.TrimSpace(s[:eq])
		s = strings.TrimLeft(s[eq+1:], " \t\n\r\f\v")
		var val strings.Builder
		quoted := strings.HasPrefix(s, "'")
		if quoted {
			s = s[1:]
		}
		i := 0
		for ; i < len(s); i++ {
			c := s[i]
			if c == '\\' && i+1 < len(s) {
				i++
				val.WriteByte(s[i])
				continue
			}
			if (quoted && c == '\'') || (!quoted && strings.IndexByte(" \t\n\r\f\v", c) >= 0) {
				i++
				break
			}
			val.WriteByte(c)
		}
		kv[key] = val.String()
		s = s[i:]
	}
}
