package integration

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"

	_ "modernc.org/sqlite" // the driver of nmauth.DialectSQLite

	"github.com/nmauth/nmauth"
)

// sqlExampleSecret stands for 32 random bytes kept outside the database.
var sqlExampleSecret = []byte("the SQL example's root secret, 32+ bytes")

// An SQLStore over SQLite keeps accounts across restarts: a user created
// by one process logs in after the database is opened again.
func Example_sqlStore() {
	dir, err := os.MkdirTemp("", "nmauth-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "nmauth.db")
	ctx := context.Background()

	open := func() (*sql.DB, *nmauth.Authenticator) {
		db, err := sql.Open("sqlite", nmauth.SQLiteDSN(path))
		if err != nil {
			panic(err)
		}
		store, err := nmauth.NewSQLStore(ctx, db, nmauth.DialectSQLite)
		if err != nil {
			panic(err)
		}
		auth, err := nmauth.New(nmauth.Config{Store: store, Secrets: [][]byte{sqlExampleSecret}})
		if err != nil {
			panic(err)
		}
		return db, auth
	}

	db, auth := open()
	if err := auth.Admin().CreateUser(ctx, "alice", "correct horse battery"); err != nil {
		panic(err)
	}
	db.Close()

	db, auth = open()
	defer db.Close()
	login, err := auth.LoginUser(ctx, "alice", "correct horse battery")
	if err != nil {
		panic(err)
	}
	p, err := auth.CheckBearer(ctx, login.AuthToken)
	fmt.Println(p.Kind, p.Name, err)
	// Output:
	// user alice <nil>
}
