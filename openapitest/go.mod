module github.com/nmauth/nmauth/openapitest

go 1.25.0

require (
	github.com/getkin/kin-openapi v0.152.0
	github.com/nmauth/nmauth v0.0.0-00010101000000-000000000000
)

require (
	github.com/boombuler/barcode v1.1.0 // indirect
	github.com/go-openapi/jsonpointer v0.22.5 // indirect
	github.com/go-openapi/swag/jsonname v0.25.5 // indirect
	github.com/golang-jwt/jwt/v5 v5.3.1 // indirect
	github.com/kr/pretty v0.3.1 // indirect
	github.com/maypok86/otter/v2 v2.4.0 // indirect
	github.com/oasdiff/yaml v0.1.1 // indirect
	github.com/oasdiff/yaml3 v0.0.14 // indirect
	github.com/pquerna/otp v1.5.0 // indirect
	github.com/santhosh-tekuri/jsonschema/v6 v6.0.3 // indirect
	go.yaml.in/yaml/v3 v3.0.6 // indirect
	golang.org/x/crypto v0.48.0 // indirect
	golang.org/x/sys v0.41.0 // indirect
	golang.org/x/text v0.34.0 // indirect
	golang.org/x/time v0.14.0 // indirect
)

// The checker is tested against the library beside it: the go.work at the
// repository's root and this replace both pick ../, so "go test ./..." works
// inside this directory with or without the workspace. An application that
// requires this module outside a clone needs a replace of its own, as for
// the commands' module.
replace github.com/nmauth/nmauth => ../
