package integration

import (
	"context"
	"crypto/rand"
	"database/sql"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/nmauth/nmauth"
)

// pgAdmin is the role of NMAUTH_TEST_POSTGRES acting as an administrator
// who makes roles and schemas for nmauthd, as .ci/postgres allows it.
type pgAdmin struct {
	t   *testing.T
	cfg *pgx.ConnConfig
	db  *sql.DB
}

func newPGAdmin(t *testing.T) *pgAdmin {
	t.Helper()
	cfg, err := pgx.ParseConfig(postgresDSN(t))
	if err != nil {
		t.Fatalf("NMAUTH_TEST_POSTGRES: %v", err)
	}
	db := stdlib.OpenDB(*cfg)
	t.Cleanup(func() { db.Close() })
	var createRole bool
	if err := db.QueryRow(`SELECT rolcreaterole OR rolsuper FROM pg_roles WHERE rolname = current_user`).Scan(&createRole); err != nil {
		t.Fatal(err)
	}
	if !createRole {
		if os.Getenv("CI") == "true" {
			t.Fatal("the role of NMAUTH_TEST_POSTGRES may not create roles; .ci/postgres gives it CREATEROLE")
		}
		t.Skip("the role of NMAUTH_TEST_POSTGRES may not create roles: run bash .ci/postgres again, which gives it CREATEROLE")
	}
	return &pgAdmin{t: t, cfg: cfg, db: db}
}

func (a *pgAdmin) exec(stmt string) {
	a.t.Helper()
	if _, err := a.db.Exec(stmt); err != nil {
		a.t.Fatalf("%s: %v", stmt, err)
	}
}

// role names a role and its password at random, and drops the role, and
// the schemas listed, when the test ends; create makes it a login role.
func (a *pgAdmin) role(create bool, schemas ...string) (name, password string) {
	a.t.Helper()
	name, password = "nmauthd_test_"+strings.ToLower(rand.Text()[:12]), rand.Text()
	a.t.Cleanup(func() {
		for _, s := range schemas {
			a.db.Exec("DROP SCHEMA IF EXISTS " + s + " CASCADE")
		}
		a.db.Exec("REVOKE ALL ON DATABASE " + a.cfg.Database + " FROM " + name)
		if _, err := a.db.Exec("DROP ROLE IF EXISTS " + name); err != nil {
			a.t.Errorf("dropping role %s: %v", name, err)
		}
	})
	if create {
		a.exec("CREATE ROLE " + name + " LOGIN PASSWORD '" + password + "'")
	}
	return name, password
}

// connect opens the test's database as role, with the role's own
// settings (its search_path among them).
func (a *pgAdmin) connect(role, password string) *sql.DB {
	c := a.cfg.Copy()
	c.User, c.Password = role, password
	delete(c.RuntimeParams, "search_path")
	db := stdlib.OpenDB(*c)
	a.t.Cleanup(func() { db.Close() })
	return db
}

// TestPostgresLeastPrivilegeRecipe runs the recipe of docs/nmauthd.md,
// testdata/postgres-role.sql, with names of the test's own: the role it
// makes creates the store's tables in its schema, and serves a login.
func TestPostgresLeastPrivilegeRecipe(t *testing.T) {
	admin := newPGAdmin(t)
	schema := "nmauth_test_" + strings.ToLower(rand.Text()[:12])
	role, password := admin.role(false, schema)
	recipe, err := os.ReadFile("testdata/postgres-role.sql")
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]string{"nmauthd": role, "nmauth": schema, "appdb": admin.cfg.Database, "'change-me'": "'" + password + "'"}
	word := regexp.MustCompile(`'change-me'|\b(nmauthd|nmauth|appdb)\b`)
	for _, stmt := range strings.Split(string(recipe), ";\n") {
		var lines []string
		for _, line := range strings.Split(stmt, "\n") {
			if !strings.HasPrefix(line, "--") {
				lines = append(lines, line)
			}
		}
		if stmt = strings.TrimSpace(strings.Join(lines, "\n")); stmt != "" {
			admin.exec(word.ReplaceAllStringFunc(stmt, func(w string) string { return names[w] }))
		}
	}

	ctx := context.Background()
	store, err := nmauth.NewSQLStore(ctx, admin.connect(role, password), nmauth.DialectPostgres)
	if err != nil {
		t.Fatalf("NewSQLStore as the recipe's role: %v", err)
	}
	auth, err := nmauth.New(nmauth.Config{Store: store, Secrets: [][]byte{[]byte("least-privilege-test-0123456789abcdef")}})
	if err != nil {
		t.Fatal(err)
	}
	if err := auth.Admin().CreateUser(ctx, "alice", "a long enough password"); err != nil {
		t.Fatal(err)
	}
	if _, err := auth.LoginUser(ctx, "alice", "a long enough password"); err != nil {
		t.Fatalf("login through the recipe's role: %v", err)
	}
	var inSchema, elsewhere int
	err = admin.db.QueryRow(`SELECT count(*) FILTER (WHERE schemaname = $2), count(*) FILTER (WHERE schemaname <> $2)
		FROM pg_tables WHERE tableowner = $1`, role, schema).Scan(&inSchema, &elsewhere)
	if err != nil {
		t.Fatal(err)
	}
	if inSchema == 0 || elsewhere != 0 {
		t.Errorf("the role owns %d tables in its schema and %d elsewhere, want some and none", inSchema, elsewhere)
	}
}

// grantHint is the statement NewSQLStore's error names.
var grantHint = regexp.MustCompile(`GRANT USAGE, CREATE ON SCHEMA (\S+) TO (\S+) `)

// TestPostgresMissingGrantNamed checks that NewSQLStore, refused by
// PostgreSQL for want of a grant on the schema, names the grant; and that
// the grant it names is the one that was missing.
func TestPostgresMissingGrantNamed(t *testing.T) {
	admin := newPGAdmin(t)
	ctx := context.Background()

	// GRANT ALL ON DATABASE gives no right on a schema: the public one
	// of PostgreSQL 15 lets the role look but not create.
	role, password := admin.role(true)
	admin.exec("GRANT ALL ON DATABASE " + admin.cfg.Database + " TO " + role)
	_, err := nmauth.NewSQLStore(ctx, admin.connect(role, password), nmauth.DialectPostgres)
	if err == nil || !strings.Contains(err.Error(), "permission denied for schema public") ||
		!strings.Contains(err.Error(), "GRANT USAGE, CREATE ON SCHEMA public TO "+role+" ") {
		t.Errorf("NewSQLStore with GRANT ALL ON DATABASE only: %v, want permission denied naming GRANT USAGE, CREATE ON SCHEMA public TO %s", err, role)
	}

	for _, c := range []struct{ name, grant, postgres string }{
		{"usage only", "USAGE", "permission denied for schema"},
		{"no right", "", "no schema has been selected to create in"},
	} {
		t.Run(c.name, func(t *testing.T) {
			schema := "nmauth_test_" + strings.ToLower(rand.Text()[:12])
			role, password := admin.role(true, schema)
			admin.exec("CREATE SCHEMA " + schema)
			if c.grant != "" {
				admin.exec("GRANT " + c.grant + " ON SCHEMA " + schema + " TO " + role)
			}
			admin.exec("ALTER ROLE " + role + " SET search_path = " + schema)
			db := admin.connect(role, password)
			_, err := nmauth.NewSQLStore(ctx, db, nmauth.DialectPostgres)
			if err == nil || !strings.Contains(err.Error(), c.postgres) {
				t.Fatalf("NewSQLStore: %v, want PostgreSQL's %q", err, c.postgres)
			}
			m := grantHint.FindStringSubmatch(err.Error())
			if m == nil || m[1] != schema || m[2] != role {
				t.Fatalf("NewSQLStore: %v, want it to name GRANT USAGE, CREATE ON SCHEMA %s TO %s", err, schema, role)
			}
			admin.exec(strings.TrimSpace(m[0]))
			if _, err := nmauth.NewSQLStore(ctx, db, nmauth.DialectPostgres); err != nil {
				t.Errorf("NewSQLStore after the grant it named: %v", err)
			}
		})
	}
}
