module github.com/nmauth/nmauth/passkey

go 1.26.0

require (
	github.com/go-webauthn/webauthn v0.18.2
	github.com/nmauth/nmauth v0.0.0-00010101000000-000000000000
)

require (
	github.com/boombuler/barcode v1.1.0 // indirect
	github.com/fxamacker/cbor/v2 v2.9.4 // indirect
	github.com/go-viper/mapstructure/v2 v2.5.0 // indirect
	github.com/go-webauthn/x v0.3.1 // indirect
	github.com/golang-jwt/jwt/v5 v5.3.1 // indirect
	github.com/google/go-tpm v0.9.8 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/maypok86/otter/v2 v2.4.0 // indirect
	github.com/philhofer/fwd v1.2.0 // indirect
	github.com/pquerna/otp v1.5.0 // indirect
	github.com/tinylib/msgp v1.6.4 // indirect
	github.com/x448/float16 v0.8.4 // indirect
	golang.org/x/crypto v0.57.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
	golang.org/x/text v0.42.0 // indirect
)

// The passkey package is built from a clone, beside the library it uses:
// the go.work at the repository's root and this replace both pick ../.
replace github.com/nmauth/nmauth => ../
