// Package passkey adds passkeys (WebAuthn credentials) to an
// [nmauth.Authenticator]: as a second factor after the password, beside or
// instead of TOTP, and, when the application turns it on, as a whole login
// without password or username. It is a module of its own,
// github.com/nmauth/nmauth/passkey, so that an application that does not
// use passkeys downloads and compiles none of it; it builds on
// github.com/go-webauthn/webauthn and on the Authenticator's public API
// only, and the Authenticator never imports it. Its powers to log users in
// and write audit events come from an [nmauth.Extension] that the
// application registers in [nmauth.Config.Extensions] and gives to it.
//
// # Setup
//
// The relying party id and the origins of the pages that run the
// ceremonies are configured, never taken from a request. The Store that
// keeps passkeys and challenges is given to the Authenticator too, whose
// [nmauth.Config.SecondFactor] asks it whether a user with the right
// password has a passkey, and so must get a pre-auth token:
//
//	store, err := passkey.NewSQLStore(ctx, db, nmauth.DialectSQLite) // or passkey.NewMemoryStore()
//	ext := new(nmauth.Extension)
//	auth, err := nmauth.New(nmauth.Config{..., SecondFactor: passkey.SecondFactor(store), Extensions: []*nmauth.Extension{ext}})
//	pk, err := passkey.New(passkey.Config{
//		Extension:    ext,
//		Store:        store,
//		RPID:         "example.com",
//		Origins:      []string{"https://auth.example.com"},
//		Passwordless: true,
//	})
//	mux.Handle("/api/", pk.Handler()) // the passkey routes, and the Authenticator's beside them
//
// # Ceremonies
//
// Each ceremony has a begin, which stores a challenge bound to its flow and
// its user until [Config.ChallengeTTL] (at most [Config.MaxChallenges]
// live ones a flow; past that 503) and answers the options for the
// browser's navigator.credentials.create or .get, and a finish, which takes
// the challenge back once, whatever the outcome, and checks the browser's
// answer against the configured relying party and origins:
//
//   - Registration ([Manager.BeginRegistration], [Manager.FinishRegistration]),
//     with the user's token: a named passkey. A user's first second factor
//     revokes the user's earlier tokens and returns a fresh one, as turning
//     TOTP on does; adding one more needs a login that passed a second
//     factor within [Config.PresenceWindow].
//   - Second factor ([Manager.BeginSecondFactor], [Manager.FinishSecondFactor]),
//     with the pre-auth token of a password login: the assertion is traded
//     for a user token by [nmauth.Extension.RedeemPreAuth], under the
//     attempt limits, backoff and events of verify-totp, where TOTP codes
//     and recovery codes still work.
//   - Passwordless login ([Manager.BeginLogin], [Manager.FinishLogin]), with
//     [Config.Passwordless]: a discoverable passkey, with user verification
//     required, finds its user by its user handle.
//
// A passkey's sign count must go up with every assertion (unless the
// authenticator keeps none): one that does not is refused as from a cloned
// authenticator and reported as [EventSignCountRegressed]. Removing a
// user's last second factor needs a recent second-factor login or the
// master key; [Manager.Reset] removes all of a user's passkeys for an
// administrator and revokes the user's tokens.
//
// Passkeys belong to the account they were registered to: an account
// deleted and created again under the same name has none of them.
package passkey
