// Package tests holds the tests of the sso module that need a SQL driver
// or a real OpenID provider (zitadel/oidc's op package): the flows and
// refusals against that provider over loopback, the stores on SQLite and
// PostgreSQL, the outage and flood tests. It is a module of its own so
// that an application that imports the sso module fetches none of what
// only these tests use.
package tests
