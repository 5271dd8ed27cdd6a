// Package integration holds the tests of nmauth that need what the library
// itself never imports: its SQL store over the real SQLite and PostgreSQL
// drivers (modernc.org/sqlite and pgx), and the QR codes of TOTP
// enrollment read back by a QR reader (gozxing), as a phone reads them.
// It is a module of its own so that the library's go.mod requires none of
// them, and an application's `go mod tidy` fetches none of them; it has no
// API. From the root of a clone:
//
//	go test ./integration/...
//
// The PostgreSQL tests skip unless NMAUTH_TEST_POSTGRES holds a DSN.
package integration
