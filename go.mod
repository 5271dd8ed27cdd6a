module github.com/nmauth/nmauth

go 1.24.0

require (
	github.com/boombuler/barcode v1.1.0
	github.com/golang-jwt/jwt/v5 v5.3.1
	github.com/maypok86/otter/v2 v2.4.0
	github.com/pquerna/otp v1.5.0
	golang.org/x/crypto v0.48.0
	golang.org/x/text v0.34.0
)

require (
	go.yaml.in/yaml/v3 v3.0.6 // indirect
	golang.org/x/sys v0.41.0 // indirect
)
