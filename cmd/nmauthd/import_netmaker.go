package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"

	"github.com/nmauth/nmauth"
	"github.com/nmauth/nmauth/sso"
)

// Netmaker v1.4.0 keeps each record as a JSON value in a key/value table
// ("key TEXT PRIMARY KEY, value TEXT") named after its kind, on SQLite or
// PostgreSQL. These are the fields the import reads; Netmaker writes many
// more, which are the application's (roles, groups, networks' settings).
type (
	netmakerUser struct {
		UserName        string `json:"username"`
		Password        string `json:"password"`
		IsMFAEnabled    bool   `json:"is_mfa_enabled"`
		TOTPSecret      string `json:"totp_secret"`
		AccountDisabled bool   `json:"account_disabled"`
		// ExternalID is the user's subject at the single sign-on provider,
		// for a user who signs in there.
		ExternalID string `json:"external_identity_provider_id"`
		AuthType   string `json:"auth_type"`
	}
	netmakerHost struct {
		ID       string `json:"id"`
		HostPass string `json:"hostpass"`
		// MacAddress is a net.HardwareAddr, which encoding/json writes as
		// base64 of its bytes.
		MacAddress []byte `json:"macaddress"`
	}
	netmakerNode struct {
		HostID  string `json:"hostid"`
		Network string `json:"network"`
	}
	netmakerSettings struct {
		AuthProvider string `json:"authprovider"`
		OIDCIssuer   string `json:"oidcissuer"`
	}
)

// importNetmaker imports the users, hosts and memberships of a Netmaker
// server's database, which it opens read-only and never writes.
func importNetmaker(ctx context.Context, c *cli, o *options, _ []string) error {
	if o.from == "" {
		return errors.New("import netmaker: --from names Netmaker's database: the path of its netmaker.db, or a postgres:// URL")
	}
	src, err := openNetmaker(ctx, o.from)
	if err != nil {
		return err
	}
	defer src.close()
	return c.withImporter(ctx, o, func(im *importer) error {
		if err := importNetmakerHosts(ctx, src, im); err != nil {
			return err
		}
		if err := importNetmakerUsers(ctx, src, im, o.ssoIssuer); err != nil {
			return err
		}
		return im.write(c.stdout, "user", "host")
	})
}

// netmakerSource is a read-only transaction on Netmaker's database, so
// that every table is read from one snapshot.
type netmakerSource struct {
	db *sql.DB
	tx *sql.Tx
}

// openNetmaker opens Netmaker's database read-only: a SQLite file as
// immutable (nothing, not even a lock or journal, is written beside it;
// stop Netmaker first or give a copy), a PostgreSQL database in a
// read-only transaction.
func openNetmaker(ctx context.Context, from string) (*netmakerSource, error) {
	var db *sql.DB
	var err error
	if isPostgresDSN(from) {
		if _, perr := url.Parse(from); perr != nil {
			return nil, errors.New("--from: malformed postgres:// URL")
		}
		db, err = sql.Open("pgx", from)
	} else {
		if _, serr := os.Stat(from); serr != nil {
			return nil, fmt.Errorf("--from: %w", serr)
		}
		db, err = sql.Open("sqlite", sqliteReadOnlyDSN(from))
	}
	if err != nil {
		return nil, fmt.Errorf("opening Netmaker's database: %w", err)
	}
	opts := &sql.TxOptions{ReadOnly: true}
	if isPostgresDSN(from) {
		// One snapshot for every table: a node and its host agree.
		opts.Isolation = sql.LevelRepeatableRead
	}
	tx, err := db.BeginTx(ctx, opts)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("opening Netmaker's database read-only: %w", err)
	}
	return &netmakerSource{db: db, tx: tx}, nil
}

// sqliteReadOnlyDSN opens path as a SQLite URI in read-only, immutable
// mode; the path is escaped as nmauth.SQLiteDSN escapes it.
func sqliteReadOnlyDSN(path string) string {
	p := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(path)
	if strings.HasPrefix(p, "/") {
		p = "//" + p
	}
	return "file:" + p + "?mode=ro&immutable=1&_pragma=query_only(1)"
}

func (s *netmakerSource) close() {
	s.tx.Rollback()
	s.db.Close()
}

// each calls fn with every record of a Netmaker table, in key order. The
// table names are Netmaker's constants, never input.
func (s *netmakerSource) each(ctx context.Context, table string, fn func(key, value string) error) error {
	rows, err := s.tx.QueryContext(ctx, "SELECT key, value FROM "+table+" ORDER BY key")
	if err != nil {
		return fmt.Errorf("reading Netmaker's %s table (is --from a Netmaker database?): %w", table, err)
	}
	defer rows.Close()
	for rows.Next() {
		var key string
		var value sql.NullString
		if err := rows.Scan(&key, &value); err != nil {
			return fmt.Errorf("reading Netmaker's %s table: %w", table, err)
		}
		if err := fn(key, value.String); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("reading Netmaker's %s table: %w", table, err)
	}
	return nil
}

// importNetmakerHosts imports the hosts, each with the networks of its
// nodes.
func importNetmakerHosts(ctx context.Context, src *netmakerSource, im *importer) error {
	networks := map[string][]string{}
	err := src.each(ctx, "nodes", func(key, value string) error {
		var n netmakerNode
		switch {
		case json.Unmarshal([]byte(value), &n) != nil:
			im.skip("node", fmt.Sprintf("%q", key), "its value is not Netmaker's JSON of a node")
		case !isUUID(n.HostID) || n.Network == "":
			im.skip("node", fmt.Sprintf("%q", key), "its host id is not a UUID, or it names no network")
		default:
			networks[strings.ToLower(n.HostID)] = append(networks[strings.ToLower(n.HostID)], n.Network)
		}
		return nil
	})
	if err != nil {
		return err
	}
	var hosts []nmauth.ImportedHost
	var ids, wheres []string
	err = src.each(ctx, "hosts", func(key, value string) error {
		var h netmakerHost
		where := fmt.Sprintf("%q", key)
		switch {
		case json.Unmarshal([]byte(value), &h) != nil:
			im.skip("host", where, "its value is not Netmaker's JSON of a host")
		case !isUUID(h.ID):
			im.skip("host", where, "its id is not a UUID")
		case h.HostPass == "":
			im.skip("host", where, "it has no password hash")
		default:
			mac := ""
			if len(h.MacAddress) > 0 {
				mac = net.HardwareAddr(h.MacAddress).String()
			}
			hosts = append(hosts, nmauth.ImportedHost{ID: h.ID, MACAddress: mac, PasswordHash: h.HostPass})
			ids, wheres = append(ids, h.ID), append(wheres, where)
		}
		return nil
	})
	if err != nil {
		return err
	}
	// Hosts whose ids differ only in case would be one host, with the
	// networks of both: neither is imported.
	for i, free := range im.withoutConflicts(nmauth.KindHost, ids, wheres) {
		if free {
			h := hosts[i]
			h.ID = strings.ToLower(h.ID)
			h.Networks = networks[h.ID]
			im.host(ctx, wheres[i], h)
		}
	}
	return nil
}

// importNetmakerUsers imports the users: with their password hash, TOTP
// secret and disabled state, or, signed in through single sign-on, with
// no password and linked to their identity at the provider. Users whose
// names would be one account are none of them imported.
func importNetmakerUsers(ctx context.Context, src *netmakerSource, im *importer, issuer string) error {
	if issuer == "" {
		issuer = netmakerIssuer(ctx, src)
	}
	var users []netmakerUser
	var names, wheres []string
	err := src.each(ctx, "users", func(key, value string) error {
		var u netmakerUser
		if json.Unmarshal([]byte(value), &u) != nil {
			im.skip("user", fmt.Sprintf("%q", key), "its value is not Netmaker's JSON of a user")
			return nil
		}
		users = append(users, u)
		names, wheres = append(names, u.UserName), append(wheres, fmt.Sprintf("%q", key))
		return nil
	})
	if err != nil {
		return err
	}
	ssoLinks := &netmakerLinks{issuer: issuer}
	for i, free := range im.withoutConflicts(nmauth.KindUser, names, wheres) {
		if !free {
			continue
		}
		if err := importNetmakerUser(ctx, im, ssoLinks, wheres[i], users[i]); err != nil {
			return err
		}
	}
	return nil
}

// importNetmakerUser imports one user of Netmaker's.
func importNetmakerUser(ctx context.Context, im *importer, links *netmakerLinks, where string, u netmakerUser) error {
	in := nmauth.ImportedUser{Name: u.UserName, Disabled: u.AccountDisabled}
	if u.IsMFAEnabled {
		in.TOTPSecret = u.TOTPSecret
	}
	external := u.ExternalID != "" || u.AuthType == "oauth"
	switch {
	case u.IsMFAEnabled && u.TOTPSecret == "":
		// Imported without it, the user would lose a factor.
		im.skip("user", where, "TOTP is on, but its secret is missing")
		return nil
	case external && (u.ExternalID == "" || links.issuer == ""):
		im.skip("user", where, "signed in through single sign-on, but its provider is unknown: give --sso-issuer")
		return nil
	case !external:
		in.PasswordHash = u.Password
		im.user(ctx, where, in)
		return nil
	}
	// An identity already linked to another account stays with it: the
	// user is not made, so that it cannot be left without its link.
	linked, err := links.linked(ctx, im, u.ExternalID)
	if err != nil {
		return err
	}
	if name, perr := nmauth.PrepareUsername(u.UserName); perr == nil && linked != "" && linked != name {
		im.skip("user", where, fmt.Sprintf("its identity at the provider is already linked to the user %q", linked))
		return nil
	}
	r, ok := im.user(ctx, where, in)
	switch {
	case !ok || linked == r.Name:
		return nil
	case r.Added:
		return links.add(ctx, im, u.ExternalID, r.Name)
	}
	// The account was there before: made by someone else, or by another
	// record. Linking the identity to it would log a stranger in.
	im.skip("single sign-on link", where, fmt.Sprintf("the user %q was already there, not made from this record, so its identity "+
		"at the provider is not linked to it; if it is the same person, link it with nmauthd user sso-link", r.Name))
	return nil
}

// netmakerLinks links the identities of imported users at one provider.
type netmakerLinks struct {
	issuer string
	store  *sso.SQLStore // opened at the first link a run writes
	// made are the links of this run, by subject, so that a dry run,
	// which writes none, sees them as the run would.
	made map[string]string
}

// linked is the user subject is linked to, "" for none. A dry run reads
// it without making the table of links; a store without it has none.
func (l *netmakerLinks) linked(ctx context.Context, im *importer, subject string) (string, error) {
	if name, ok := l.made[subject]; ok {
		return name, nil
	}
	if im.b.db == nil {
		return "", nil
	}
	if im.dryRun {
		var name string
		err := im.b.db.db.QueryRowContext(ctx, im.b.db.dialect.Rebind(
			`SELECT username FROM nmauth_sso_links WHERE issuer = ? AND subject = ?`), l.issuer, subject).Scan(&name)
		if err != nil {
			return "", nil
		}
		return name, nil
	}
	if err := l.open(ctx, im); err != nil {
		return "", err
	}
	name, err := l.store.Link(ctx, l.issuer, subject)
	if errors.Is(err, nmauth.ErrNotFound) {
		return "", nil
	}
	return name, err
}

// add links subject to the user name, made from its record by this run.
func (l *netmakerLinks) add(ctx context.Context, im *importer, subject, name string) error {
	if !im.dryRun {
		if err := l.open(ctx, im); err != nil {
			return err
		}
		if err := l.store.AddLink(ctx, l.issuer, subject, name); err != nil {
			return err
		}
	}
	if l.made == nil {
		l.made = map[string]string{}
	}
	l.made[subject] = name
	im.report.links++
	return nil
}

func (l *netmakerLinks) open(ctx context.Context, im *importer) error {
	if l.store != nil {
		return nil
	}
	var err error
	l.store, err = sso.NewSQLStore(ctx, im.b.db.db, im.b.db.dialect)
	return err
}

// netmakerIssuer is the OpenID issuer of Netmaker's own settings: the
// OIDC issuer it was given, or Google's. GitHub and Azure AD name none
// that the import could know.
func netmakerIssuer(ctx context.Context, src *netmakerSource) string {
	var issuer string
	_ = src.each(ctx, "server_settings", func(key, value string) error {
		var s netmakerSettings
		if key != "server_cfg" || json.Unmarshal([]byte(value), &s) != nil {
			return nil
		}
		switch s.AuthProvider {
		case "oidc":
			issuer = s.OIDCIssuer
		case "google":
			issuer = "https://accounts.google.com"
		}
		return nil
	})
	return issuer
}

// isUUID reports whether s is a UUID in its text form, as Netmaker writes
// host ids.
func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
				return false
			}
		}
	}
	return true
}
