module github.com/nmauth/nmauth/integration

go 1.24.0

require (
	github.com/jackc/pgx/v5 v5.8.0
	github.com/makiuchi-d/gozxing v0.1.1
	github.com/nmauth/nmauth v0.0.0-00010101000000-000000000000
	github.com/pquerna/otp v1.5.0
	golang.org/x/crypto v0.48.0
	modernc.org/sqlite v1.46.1
)

require (
	github.com/boombuler/barcode v1.1.0 // indirect
	github.com/dustin/go-humanize v1.0.1 // indirect
	github.com/golang-jwt/jwt/v5 v5.3.1 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/jackc/pgpassfile v1.0.0 // indirect
	github.com/jackc/pgservicefile v0.0.0-20240606120523-5a60cdf6a761 // indirect
	github.com/jackc/puddle/v2 v2.2.2 // indirect
	github.com/mattn/go-isatty v0.0.20 // indirect
	github.com/maypok86/otter/v2 v2.4.0 // indirect
	github.com/ncruces/go-strftime v1.0.0 // indirect
	github.com/remyoudompheng/bigfft v0.0.0-20230129092748-24d4a6f8daec // indirect
	golang.org/x/exp v0.0.0-20251023183803-a4bb9ffd2546 // indirect
	golang.org/x/sync v0.19.0 // indirect
	golang.org/x/sys v0.41.0 // indirect
	golang.org/x/text v0.34.0 // indirect
	golang.org/x/xerrors v0.0.0-20200804184101-5ec99f83aff1 // indirect
	modernc.org/libc v1.67.6 // indirect
	modernc.org/mathutil v1.7.1 // indirect
	modernc.org/memory v1.11.0 // indirect
)

// The tests run against the library beside them: the go.work at the
// repository's root and this replace both pick ../, so "go test ./..." works
// inside this directory with or without the workspace.
replace github.com/nmauth/nmauth => ../
