// Command nmauthd is the nmauth demo server and its admin tool. It serves
// the authentication routes of nmauth over a SQLite file or a
// PostgreSQL database, and manages users and hosts in that same database.
//
//	nmauthd serve [--addr 127.0.0.1:8081] [--db nmauth.db] [--dev] [--log-json]
//	              [--log-level debug|info|warn|error] [--access-log]
//	              [--wire spec|netmaker] [--cors-origin ORIGIN]... [--metrics-addr ADDR]
//	nmauthd user add NAME          password from stdin, or prompted on a terminal
//	nmauthd user list
//	nmauthd user disable NAME
//	nmauthd user totp-reset NAME
//	nmauthd host add ID [--mac MAC] [--network NET]...
//	                               password from stdin, or generated and printed;
//	                               each --network lets the host log in as a node there
//	nmauthd host list
//	nmauthd reseal                 seal TOTP secrets under the first root secret
//	nmauthd check [--repair]       list (and repair) records the database cannot decode
//
// Every command takes --db (a SQLite path, or PostgreSQL as a
// postgres:// URL or a key=value DSN; else NMAUTH_DB), --log-json and
// --log-level, before or after the command's name. Log lines are written
// in batches by one goroutine; when stderr does not keep up, lines are
// dropped and counted rather than waited for. One line per request is
// written with --access-log only.
//
// The root secret comes from NMAUTH_SECRET (hex or base64, 32 bytes or
// more; a comma-separated list to rotate, the first signs), or else from
// a file beside the SQLite database, made on first use. The master key
// comes from MASTER_KEY or config/environments/<env>.yaml.
//
// To try it out:
//
//	go run ./cmd/nmauthd serve --dev
package main

import (
	"os"
)

func main() {
	os.Exit(newCLI().run(os.Args[1:]))
}
