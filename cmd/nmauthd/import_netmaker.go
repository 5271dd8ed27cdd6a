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
	return src.each(ctx, "hosts", func(key, value string) error {
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
			id := strings.ToLower(h.ID)
			im.host(ctx, where, nmauth.ImportedHost{ID: id, MACAddress: mac, PasswordHash: h.HostPass, Networks: networks[id]})
		}
		return nil
	})
}

// importNetmakerUsers imports the users: with their password hash, TOTP
// secret and disabled state, or, signed in through single sign-on, with
// no password and linked to their identity at the provider.
func importNetmakerUsers(ctx context.Context, src *netmakerSource, im *importer, issuer string) error {
	if issuer == "" {
		issuer = netmakerIssuer(ctx, src)
	}
	var links *sso.SQLStore
	return src.each(ctx, "users", func(key, value string) error {
		var u netmakerUser
		where := fmt.Sprintf("%q", key)
		if json.Unmarshal([]byte(value), &u) != nil {
			im.skip("user", where, "its value is not Netmaker's JSON of a user")
			return nil
		}
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
		case external && (u.ExternalID == "" || issuer == ""):
			im.skip("user", where, "signed in through single sign-on, but its provider is unknown: give --sso-issuer")
			return nil
		case !external:
			in.PasswordHash = u.Password
		}
		r, ok := im.user(ctx, where, in)
		if !ok || !external {
			return nil
		}
		if links == nil && !im.dryRun {
			var err error
			if links, err = sso.NewSQLStore(ctx, im.b.db.db, im.b.db.dialect); err != nil {
				return err
			}
		}
		return linkSSO(ctx, im, links, issuer, u.ExternalID, r.Name)
	})
}

// linkSSO links an imported user to its identity, unless it is already.
func linkSSO(ctx context.Context, im *importer, links *sso.SQLStore, issuer, subject, name string) error {
	if links != nil {
		linked, err := links.Link(ctx, issuer, subject)
		if err == nil && linked == name {
			return nil
		}
		if err != nil && !errors.Is(err, nmauth.ErrNotFound) {
			return err
		}
		if err := links.AddLink(ctx, issuer, subject, name); err != nil {
			return err
		}
	}
	im.report.links++
	return nil
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
