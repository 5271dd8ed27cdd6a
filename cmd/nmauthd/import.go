package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"

	"github.com/nmauth/nmauth"
)

// maxImportLine bounds one line of an import on stdin: a record with a
// hash and a few networks fits in far less.
const maxImportLine = 64 << 10

// importUserLine is one line of user import: an account with the fields
// of nmauth.ImportedUser.
type importUserLine struct {
	Name         string `json:"name"`
	PasswordHash string `json:"password_hash"`
	Password     string `json:"password"`
	TOTPSecret   string `json:"totp_secret"`
	Disabled     bool   `json:"disabled"`
}

// importHostLine is one JSON line of host import: a host with the fields
// of nmauth.ImportedHost.
type importHostLine struct {
	ID           string   `json:"id"`
	MAC          string   `json:"mac"`
	PasswordHash string   `json:"password_hash"`
	Password     string   `json:"password"`
	Disabled     bool     `json:"disabled"`
	Networks     []string `json:"networks"`
}

// importer imports records one at a time into the backend, or with
// dryRun only plans them, and keeps the report.
type importer struct {
	b      *backend
	dryRun bool
	report importReport
}

// importReport counts what an import did and lists what it skipped and
// which hashes are weak. It never holds a secret.
type importReport struct {
	added, existing, skipped map[string]int
	memberships, links       int
	lines                    []string
}

func newImporter(b *backend, dryRun bool) *importer {
	return &importer{b: b, dryRun: dryRun, report: importReport{
		added: map[string]int{}, existing: map[string]int{}, skipped: map[string]int{},
	}}
}

// skip notes a record that was not imported, and why.
func (im *importer) skip(kind, where, reason string) {
	im.report.skipped[kind]++
	im.report.lines = append(im.report.lines, fmt.Sprintf("skipped %s %s: %s", kind, where, reason))
}

// done notes what the import of one account did.
func (im *importer) done(kind string, r nmauth.ImportResult) {
	if !r.Added {
		im.report.existing[kind]++
		return
	}
	im.report.added[kind]++
	if r.Weak != "" {
		im.report.lines = append(im.report.lines, fmt.Sprintf("weak hash: %s %q: %s; replaced at its next login", kind, r.Name, r.Weak))
	}
}

// withoutConflicts skips every record of one import that would share an
// account with another (see nmauth.ImportConflicts), each named with the
// others of its group, and reports which records are free to import.
// names and wheres are the records' names and where each was found.
func (im *importer) withoutConflicts(kind nmauth.PrincipalKind, names, wheres []string) (free []bool) {
	free = make([]bool, len(names))
	for i := range free {
		free[i] = true
	}
	for _, group := range im.b.auth.Admin().ImportConflicts(kind, names) {
		for _, i := range group {
			free[i] = false
			var others []string
			for _, j := range group {
				if j != i {
					others = append(others, wheres[j])
				}
			}
			im.skip(string(kind), wheres[i], fmt.Sprintf("conflict: it and %s would be one %s in nmauth, so none of them is imported",
				strings.Join(others, " and "), kind))
		}
	}
	return free
}

// user imports one user, or plans it.
func (im *importer) user(ctx context.Context, where string, u nmauth.ImportedUser) (nmauth.ImportResult, bool) {
	var r nmauth.ImportResult
	var err error
	if im.dryRun {
		r, err = im.b.auth.Admin().PlanUserImport(ctx, u)
	} else {
		r, err = im.b.auth.Admin().ImportUser(ctx, u)
	}
	if err != nil {
		im.skip("user", where, importReason(err))
		return r, false
	}
	im.done("user", r)
	return r, true
}

// host imports one host and its memberships, or plans them.
func (im *importer) host(ctx context.Context, where string, h nmauth.ImportedHost) {
	var r nmauth.ImportResult
	var err error
	switch {
	case im.dryRun && im.b.db == nil:
		r, err = im.b.auth.Admin().PlanHostImport(ctx, h, nil)
	case im.dryRun:
		r, err = im.b.auth.Admin().PlanHostImport(ctx, h, im.b.db.isMember)
	default:
		r, err = im.b.auth.Admin().ImportHost(ctx, h, im.b.db.addMembership)
	}
	if err != nil {
		im.skip("host", where, importReason(err))
		return
	}
	im.report.memberships += r.Memberships
	im.done("host", r)
}

// importReason is an import error as a reason in the report: the
// library's errors name the record's fault and never a secret.
func importReason(err error) string {
	switch {
	case errors.Is(err, nmauth.ErrInvalidUsername):
		return "the username is not valid (PRECIS UsernameCaseMapped, at most 64 bytes)"
	case errors.Is(err, nmauth.ErrInvalidHost):
		return "the host id or MAC address is not valid"
	}
	return strings.TrimPrefix(oneLine(err), "nmauth: ")
}

// write prints the counts, then every skipped record and weak hash. It
// returns an error when a record was skipped, so that a script notices.
func (im *importer) write(w io.Writer, kinds ...string) error {
	verb := "added"
	if im.dryRun {
		verb = "to add"
		fmt.Fprintln(w, "dry run: nothing was written")
	}
	for _, kind := range kinds {
		r := im.report
		fmt.Fprintf(w, "%ss: %d %s, %d already there, %d skipped\n", kind, r.added[kind], verb, r.existing[kind], r.skipped[kind])
	}
	skipped := 0
	for _, n := range im.report.skipped {
		skipped += n
	}
	if im.report.memberships > 0 || contains(kinds, "host") {
		fmt.Fprintf(w, "memberships: %d %s\n", im.report.memberships, verb)
	}
	if im.report.links > 0 {
		fmt.Fprintf(w, "single sign-on links: %d %s\n", im.report.links, verb)
	}
	for _, l := range im.report.lines {
		fmt.Fprintln(w, l)
	}
	switch {
	case skipped > 0 && im.dryRun:
		return fmt.Errorf("%d records would be skipped, each named above; nothing was written, and a run without --dry-run "+
			"would import the others", skipped)
	case skipped > 0:
		return fmt.Errorf("%d records skipped, each named above; the others are imported, and a run again changes only what is missing", skipped)
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// withImporter opens the backend as the server does, so that an import
// into a new SQLite database makes its root secret file, and runs fn. A
// dry run into a SQLite database that does not exist yet plans against an
// empty store in memory, and so makes no file.
func (c *cli) withImporter(ctx context.Context, o *options, fn func(*importer) error) error {
	if _, err := os.Stat(o.db); o.dryRun && !isPostgresDSN(o.db) && errors.Is(err, fs.ErrNotExist) {
		auth, err := nmauth.New(nmauth.Config{Store: nmauth.NewMemoryStore(), Secrets: [][]byte{[]byte(rand.Text() + rand.Text())}})
		if err != nil {
			return err
		}
		return fn(newImporter(&backend{auth: auth}, true))
	}
	b, err := c.openBackend(ctx, o, nil, !o.dryRun, nil)
	if err != nil {
		return err
	}
	defer b.db.Close()
	return fn(newImporter(b, o.dryRun))
}

// eachLine calls fn with every line of r that is not blank or a comment,
// and its number; a line too long is reported by bad and skipped.
func eachLine(r io.Reader, fn func(n int, line []byte), bad func(n int, reason string)) error {
	br := bufio.NewReaderSize(r, 4096)
	for n := 1; ; n++ {
		line, tooLong, err := readLine(br)
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("reading line %d: %w", n, err)
		}
		if tooLong {
			bad(n, fmt.Sprintf("longer than %d bytes", maxImportLine))
		} else if t := bytes.TrimSpace(line); len(t) > 0 && t[0] != '#' {
			fn(n, t)
		}
		if err != nil {
			return nil
		}
	}
}

// readLine reads one line without its end, and only its end once it is
// longer than maxImportLine. io.EOF comes with the last line.
func readLine(br *bufio.Reader) (line []byte, tooLong bool, err error) {
	for {
		chunk, err := br.ReadSlice('\n')
		if !tooLong && len(line)+len(chunk) > maxImportLine+2 {
			tooLong, line = true, nil
		}
		if !tooLong {
			line = append(line, chunk...)
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return bytes.TrimRight(line, "\r\n"), tooLong, err
		}
	}
}

// decodeLine decodes one JSON object, refusing unknown keys (a misspelt
// field would otherwise drop a credential), a key given twice, and
// anything after it.
func decodeLine(line []byte, v any) error {
	if key := repeatedKey(line); key != "" {
		return fmt.Errorf("the key %s is given more than once; only one of its values would be taken", key)
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("not a JSON object of the import's fields: %s", oneLine(err))
	}
	if dec.More() {
		return errors.New("more than one JSON value on the line")
	}
	return nil
}

// repeatedKey returns the first key of the JSON object line that repeats
// an earlier one, quoted, "" for none (or for a line that is no object,
// which the decoder refuses). encoding/json would keep the last value of
// a repeated key, and match keys to fields whatever their case, so that
// "name" and "Name" set one field: a line that names a field twice is
// refused rather than read one way here and another by whoever checked
// it.
func repeatedKey(line []byte) string {
	dec := json.NewDecoder(bytes.NewReader(line))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return ""
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		key, isKey := tok.(string)
		if err != nil || !isKey {
			return ""
		}
		// Upper, then lower case, folds as encoding/json's match does
		// ("ſ" is "s", the Kelvin sign "k").
		fold := strings.ToLower(strings.ToUpper(key))
		if seen[fold] {
			return quoteKey(key)
		}
		seen[fold] = true
		var value json.RawMessage
		if dec.Decode(&value) != nil {
			return ""
		}
	}
	return ""
}

// quoteKey quotes a key for the report, cut to 64 bytes.
func quoteKey(key string) string {
	if len(key) > 64 {
		return strconv.Quote(strings.ToValidUTF8(key[:64], "")) + "…"
	}
	return strconv.Quote(key)
}

// userImport adds the users on stdin, one JSON object a line. The lines
// are read first, so that users whose names would be one account are
// found and none of them is imported.
func userImport(ctx context.Context, c *cli, o *options, _ []string) error {
	return c.withImporter(ctx, o, func(im *importer) error {
		var users []nmauth.ImportedUser
		var names, wheres []string
		err := eachLine(c.stdin, func(n int, line []byte) {
			where := fmt.Sprintf("on line %d", n)
			var u importUserLine
			if err := decodeLine(line, &u); err != nil {
				im.skip("user", where, err.Error())
				return
			}
			users = append(users, nmauth.ImportedUser{
				Name: u.Name, PasswordHash: u.PasswordHash, Password: u.Password, TOTPSecret: u.TOTPSecret, Disabled: u.Disabled,
			})
			names, wheres = append(names, u.Name), append(wheres, fmt.Sprintf("%q %s", u.Name, where))
		}, func(n int, reason string) { im.skip("user", fmt.Sprintf("on line %d", n), reason) })
		if err != nil {
			return err
		}
		for i, free := range im.withoutConflicts(nmauth.KindUser, names, wheres) {
			if free {
				im.user(ctx, wheres[i], users[i])
			}
		}
		return im.write(c.stdout, "user")
	})
}

// hostImport adds the hosts on stdin, one a line: a JSON object, or as
// before "ID PASSWORD [MAC]". A password that a program drew at random,
// as netclient's are, is kept as a keyed digest and costs microseconds;
// any other costs an argon2id hash. A line that cannot be read is skipped
// and reported by its number, never its password; hosts whose ids differ
// only in case are none of them imported.
func hostImport(ctx context.Context, c *cli, o *options, _ []string) error {
	return c.withImporter(ctx, o, func(im *importer) error {
		var hosts []nmauth.ImportedHost
		var ids, wheres []string
		err := eachLine(c.stdin, func(n int, line []byte) {
			where := fmt.Sprintf("on line %d", n)
			h, err := parseHostLine(line)
			if err != nil {
				im.skip("host", where, err.Error())
				return
			}
			hosts = append(hosts, h)
			ids, wheres = append(ids, h.ID), append(wheres, fmt.Sprintf("%q %s", h.ID, where))
		}, func(n int, reason string) { im.skip("host", fmt.Sprintf("on line %d", n), reason) })
		if err != nil {
			return err
		}
		for i, free := range im.withoutConflicts(nmauth.KindHost, ids, wheres) {
			if free {
				im.host(ctx, wheres[i], hosts[i])
			}
		}
		return im.write(c.stdout, "host")
	})
}

// parseHostLine reads one line of host import.
func parseHostLine(line []byte) (nmauth.ImportedHost, error) {
	if line[0] == '{' {
		var h importHostLine
		if err := decodeLine(line, &h); err != nil {
			return nmauth.ImportedHost{}, err
		}
		return nmauth.ImportedHost{ID: h.ID, MACAddress: h.MAC, PasswordHash: h.PasswordHash, Password: h.Password,
			Disabled: h.Disabled, Networks: h.Networks}, nil
	}
	fields := strings.Fields(string(line))
	if len(fields) < 2 || len(fields) > 3 {
		return nmauth.ImportedHost{}, errors.New("want a JSON object, or ID PASSWORD [MAC]")
	}
	h := nmauth.ImportedHost{ID: fields[0], Password: fields[1]}
	if len(fields) == 3 {
		h.MACAddress = fields[2]
	}
	return h, nil
}
