// Package nmauth gives a network-management service its authentication:
// hosts and users log in and get bearer tokens, users turn on TOTP
// two-factor login, and every other API call is checked by its bearer
// credential, the master key or a token this package issued.
//
// # Setting up
//
// An [Authenticator] needs a [Store] for users and hosts and at least one
// root secret of 32 random bytes, kept outside that store.
// [ParseSecrets] reads secrets from text such as an environment variable
// (hex or base64, a comma-separated list to rotate):
//
//	secrets, err := nmauth.ParseSecrets(os.Getenv("NMAUTH_SECRET"))
//	...
//	auth, err := nmauth.New(nmauth.Config{
//		Store:     nmauth.NewMemoryStore(), // or an SQLStore, or your own
//		Secrets:   secrets,
//		MasterKey: masterKey, // from NewMasterKey; nil for none
//	})
//
// Mount its handler on the application's mux, and protect the
// application's own routes with its middleware:
//
//	mux.Handle("/api/", auth.Handler())
//	mux.Handle("GET /api/networks", auth.Middleware(listNetworks))
//
// Inside a protected handler, [FromContext] returns the [Principal]: the
// master key, a user, a host or a node.
//
// # The application's own routes
//
// The blocks the handler is built of serve the application's routes too:
//
//   - [Authenticator.Middleware] admits a request with a valid bearer
//     credential; [Authenticator.Require] admits one with a valid bearer
//     credential of some kinds of principal only, answering 403 to the
//     others, in one step.
//   - [Authenticator.Limit] puts a route that checks a secret of the
//     application's own, such as a node key, or that writes for a caller
//     who proved nothing, under the per-client attempt limit of the login
//     routes, sharing their budget; an attempt is given back only when a
//     token is minted for a login within the request.
//   - [Authenticator.WriteResponse] and [Authenticator.WriteError] answer
//     in the envelope of the active [WireProfile], errors with the status
//     and headers the handler gives them and never their text.
//
// For example, a route only nodes may call, and a node login of the
// application's own:
//
//	nodesOnly := auth.Require(nmauth.KindNode)
//	mux.Handle("POST /api/nodes/{network}/checkin", nodesOnly(checkin))
//	mux.Handle("POST /api/nodes/{network}/join", auth.Limit(join)) // join calls IssueNodeToken(r.Context(), …)
//
// [Config.OnEvent] receives every audit event with the context of the
// request that caused it, so a log line can carry its request id, and
// [Event.Client] names the client.
//
// # Accounts
//
// Users and hosts have the same lifecycle: [Admin.CreateUser] and
// [Admin.CreateHost], DisableUser and DisableHost, EnableUser and
// EnableHost, SetUserPassword and SetHostPassword, RevokeUserTokens and
// RevokeHostTokens, DeleteUser and DeleteHost. [Admin.ListUsers]
// and [Admin.ListHosts] page through them without a hash or a
// secret. Node tokens from [Authenticator.IssueNodeToken] are revoked
// through [Config.NodeTokenValid]; those from [Authenticator.LoginNode]
// die with their host's tokens.
//
// # Logging in
//
// A host posts its id, MAC address and password to
// /api/hosts/adm/authenticate and gets a host token. A user posts a
// username and password to /api/users/adm/authenticate and gets a user
// token, or, with TOTP on, a pre-auth token that is good for one thing:
// posting a code to /api/users/{username}/auth/verify-totp, which answers
// with the user token. A host that is a member of a network by
// [Config.NodeMember] posts the same body to
// /api/nodes/{network}/authenticate and gets a node token; an application
// that checks nodes its own way mints one with
// [Authenticator.IssueNodeToken].
//
// # Turning on TOTP
//
// A logged-in user posts to /api/users/{username}/auth/init-totp and gets
// an otpauth URL, its QR code and a signature binding the URL to the user
// for ten minutes. Nothing is stored yet. The user scans the code and posts
// the URL, the signature and a first code to complete-totp; the secret is
// then stored sealed with AES-256-GCM and the answer carries ten single-use
// recovery codes. Every code is accepted once only, across replicas.
//
// # Tokens
//
// All tokens are HS256 JWTs with their own audience and signing key per
// kind, so a token of one kind is never accepted as another:
//
//	user      1 h     user login without TOTP, or verify-totp
//	pre-auth  5 min   user login with TOTP on; accepted by verify-totp only
//	host      15 min  host login
//	node      15 min  node login, or IssueNodeToken
//
// Disabling or revoking a user or host, changing its password, resetting
// TOTP, and turning TOTP on or replacing it revoke the account's tokens (a
// node token from node login with its host's): each moves the account's
// generation, which every token carries, so no clock decides. Deleting an
// account kills its tokens too, and a new account of the same name starts
// at a random generation.
package nmauth
