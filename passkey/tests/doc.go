// Package tests holds the tests of the passkey module that need a SQL
// driver or the OpenAPI validator: the flows and refusals over the memory
// store, SQLite and PostgreSQL, every exchange checked against the OpenAPI
// document of its profile, the attack suite and the fuzz target. It is a
// module of its own so that an application that imports the passkey
// module fetches none of what only these tests use.
package tests
