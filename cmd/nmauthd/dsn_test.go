package main

import (
	"bytes"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// closedPort is a loopback port nothing listens on, for a PostgreSQL
// connection that fails.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	ln.Close()
	return port
}

// TestDSNSecretsNotPrinted: a PostgreSQL DSN whose server refuses the
// connection, given by --db or by NMAUTH_DB, as a URL or as key=value,
// fails with an error that names the connection and none of its secrets
// (user information's password, password=, sslpassword=); a key=value
// DSN is read as PostgreSQL and never becomes a SQLite file.
func TestDSNSecretsNotPrinted(t *testing.T) {
	port := closedPort(t)
	const pw, sslpw = "Pw-Url-9f3k2", "Ssl-Pass-7q1z"
	for _, tc := range []struct {
		name, dsn string
	}{
		{"URL user information", "postgres://nmauth:" + pw + "@127.0.0.1:" + port + "/nmauth_test?sslmode=disable"},
		{"URL escaped user information", "postgres://nmauth:" + url.PathEscape(pw+"@/x") + "@127.0.0.1:" + port + "/nmauth_test?sslmode=disable"},
		{"URL password=", "postgresql://nmauth@127.0.0.1:" + port + "/nmauth_test?sslmode=disable&password=" + pw + "&sslpassword=" + sslpw},
		{"key=value", "host=127.0.0.1 port=" + port + " user=nmauth password=" + pw + " sslpassword=" + sslpw + " dbname=nmauth_test sslmode=disable"},
		{"key=value quoted", "host=127.0.0.1 port=" + port + " password = '" + pw + " x' sslpassword='" + sslpw + "' dbname=nmauth_test sslmode=disable"},
	} {
		for _, via := range []string{"--db", envDB} {
			t.Run(tc.name+" by "+via, func(t *testing.T) {
				dir := t.TempDir()
				env := baseEnv("MASTER_KEY="+testMasterKey, "NMAUTH_SECRET="+newRootSecret(t))
				args := []string{"--log-json", "user", "list"}
				if via == envDB {
					env = append(env, envDB+"="+tc.dsn)
				} else {
					args = append(args, "--db", tc.dsn)
				}
				r := runNmauthd(t, dir, env, "", args...)
				out := r.stdout + r.stderr
				if r.code != exitFail || !strings.Contains(out, "connect") || !strings.Contains(out, "127.0.0.1") {
					t.Errorf("exit %d, %q; want exit 1 and the connection's failure", r.code, out)
				}
				for _, secret := range []string{pw, sslpw, url.PathEscape(pw + "@/x")} {
					if strings.Contains(out, secret) {
						t.Errorf("the output holds the secret %q:\n%s", secret, out)
					}
				}
				if files, _ := os.ReadDir(dir); len(files) != 0 {
					t.Errorf("files made in the working directory: %v", files)
				}
			})
		}
	}
}

// TestImportSourceSecretsNotPrinted: import netmaker --from a PostgreSQL
// DSN that cannot be reached names the failure without the DSN's
// password, as --db does.
func TestImportSourceSecretsNotPrinted(t *testing.T) {
	port := closedPort(t)
	const pw = "From-Pw-4k8d1"
	for _, from := range []string{
		"postgres://netmaker:" + pw + "@127.0.0.1:" + port + "/netmaker?sslmode=disable",
		"host=127.0.0.1 port=" + port + " user=netmaker password=" + pw + " dbname=netmaker sslmode=disable",
	} {
		dir := t.TempDir()
		env := baseEnv("MASTER_KEY="+testMasterKey, "NMAUTH_SECRET="+newRootSecret(t))
		r := runNmauthd(t, dir, env, "", "--log-json", "import", "netmaker", "--from", from, "--db", filepath.Join(dir, "nmauth.db"))
		out := r.stdout + r.stderr
		if r.code == exitOK || !strings.Contains(out, "127.0.0.1") {
			t.Errorf("exit %d, %q; want a failure naming the source", r.code, out)
		}
		if strings.Contains(out, pw) {
			t.Errorf("the output holds the source's password:\n%s", out)
		}
	}
}

// TestDSNSecretsNotLogged: nmauthd serving from PostgreSQL, its DSN in
// NMAUTH_DB or --db as a URL with password= and sslpassword=, or as
// key=value, logs the database as postgres://user@host:port/db and never
// the password, from its start line through requests to its last line.
func TestDSNSecretsNotLogged(t *testing.T) {
	for _, form := range []string{"URL", "key=value", "URL by --db"} {
		t.Run(form, func(t *testing.T) {
			u, err := url.Parse(postgresDSN(t))
			if err != nil {
				t.Fatal(err)
			}
			password, _ := u.User.Password()
			if password == "" {
				t.Fatal("NMAUTH_TEST_POSTGRES has no password")
			}
			const sslpw = "Ssl-Pass-7q1z"
			q := u.Query()
			q.Set("password", password)
			q.Set("sslpassword", sslpw)
			asURL := *u
			asURL.User = url.User(u.User.Username())
			asURL.RawQuery = q.Encode()
			dsn := asURL.String()
			if form == "key=value" {
				dsn = strings.Join([]string{"host=" + u.Hostname(), "port=" + u.Port(), "user=" + u.User.Username(),
					"password='" + password + "'", "sslpassword=" + sslpw, "dbname=" + strings.TrimPrefix(u.Path, "/"),
					"sslmode=disable", "search_path=" + q.Get("search_path")}, " ")
			}
			dir := t.TempDir()
			env := baseEnv("MASTER_KEY="+testMasterKey, "NMAUTH_SECRET="+newRootSecret(t))
			args := []string{"--log-json"}
			if form == "URL by --db" {
				args = append(args, "--db", dsn)
			} else {
				env = append(env, envDB+"="+dsn)
			}
			mustRun(t, dir, env, "new-user-password-1\n", append(args, "user", "add", "ann")...)
			d := startDaemon(t, dir, env, args...)
			d.loginUser("ann", "new-user-password-1")
			d.stop()
			log := d.stderr.String()
			want := "postgres://" + u.User.Username() + "@" + u.Host + "/" + strings.TrimPrefix(u.Path, "/")
			for _, rec := range logRecords(t, log) {
				if rec["msg"] == "listening" && rec["db"] != want {
					t.Errorf("listening on db %v, want %s", rec["db"], want)
				}
			}
			for _, secret := range []string{password, sslpw} {
				if strings.Contains(log, secret) {
					t.Errorf("the log holds the secret %q:\n%s", secret, log)
				}
			}
			if files, _ := filepath.Glob(filepath.Join(dir, "*")); len(files) != 0 {
				t.Errorf("files made in the working directory: %v", files)
			}
		})
	}
}

// TestRedactorLogger: the logger of a PostgreSQL DSN replaces its secrets
// in the message, in strings, errors and other values, in groups and in
// attributes given beforehand, in text and JSON alike.
func TestRedactorLogger(t *testing.T) {
	const pw = `pa"ss\word`
	dsn := "postgres://u:" + url.PathEscape(pw) + "@db.example:5432/auth?sslpassword=key-phrase-1"
	r := newRedactor(dsn, func(name string) string {
		if name == "PGPASSWORD" {
			return "from-the-environment"
		}
		return ""
	})
	for _, json := range []bool{false, true} {
		var out bytes.Buffer
		log := r.logger(newLogger(&out, json, slog.LevelInfo)).With("dsn", dsn)
		log.Info("connecting with "+pw, "err", fmt.Errorf("dial: %s", "key-phrase-1"),
			slog.Group("db", "password", "from-the-environment", "dsn", dsn), "values", []string{pw})
		for _, secret := range []string{pw, strconv.Quote(pw), "key-phrase-1", "from-the-environment", url.PathEscape(pw), "pa\\\"ss"} {
			if strings.Contains(out.String(), secret) {
				t.Errorf("json %v: the log holds %q: %s", json, secret, out.String())
			}
		}
		if !strings.Contains(out.String(), "connecting with xxxxx") || !strings.Contains(out.String(), "dial: xxxxx") {
			t.Errorf("json %v: %s; want the secrets replaced by xxxxx", json, out.String())
		}
	}
	if got := newRedactor("nmauth.db", func(string) string { return "x" }).redact("nmauth.db x"); got != "nmauth.db x" {
		t.Errorf("a SQLite path redacted %q", got)
	}
}
