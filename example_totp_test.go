package nmauth_test

import (
	"context"
	"fmt"
	"time"

	"github.com/pquerna/otp"
	"github.com/pquerna/otp/totp"

	"github.com/nmauth/nmauth"
)

// totpExampleSecret stands for 32 random bytes kept outside the database.
var totpExampleSecret = []byte("the TOTP example's root secret, 32+ bytes")

// A user turns TOTP on, then logs in with a password and a code. The codes
// come from the otpauth URL as an authenticator app reads it, here with
// pquerna/otp, at a clock the example moves by hand.
func ExampleAuthenticator_VerifyTOTP() {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	auth, err := nmauth.New(nmauth.Config{
		Store:   nmauth.NewMemoryStore(),
		Secrets: [][]byte{totpExampleSecret},
		Now:     func() time.Time { return now },
	})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	if err := auth.Admin().CreateUser(ctx, "alice", "correct horse battery"); err != nil {
		panic(err)
	}
	login, err := auth.LoginUser(ctx, "alice", "correct horse battery")
	if err != nil {
		panic(err)
	}
	alice, err := auth.CheckBearer(ctx, login.AuthToken)
	if err != nil {
		panic(err)
	}

	// Enrollment: the app scans the URL; its first code completes it.
	enrollment, err := auth.InitTOTP(ctx, alice, "alice")
	if err != nil {
		panic(err)
	}
	key, err := otp.NewKeyFromURL(enrollment.URL)
	if err != nil {
		panic(err)
	}
	code, err := totp.GenerateCode(key.Secret(), now)
	if err != nil {
		panic(err)
	}
	// current is "": alice has no second factor to replace yet.
	done, err := auth.CompleteTOTP(ctx, alice, "alice", enrollment.URL, enrollment.Signature, code, "")
	if err != nil {
		panic(err)
	}
	fmt.Println("recovery codes:", len(done.RecoveryCodes))

	// The password alone now earns a pre-auth token, redeemed with a code
	// of a later step: each step's code is accepted once.
	now = now.Add(30 * time.Second)
	login, err = auth.LoginUser(ctx, "alice", "correct horse battery")
	if err != nil {
		panic(err)
	}
	fmt.Println("TOTP required:", login.TOTPRequired, "token:", login.AuthToken != "")
	code, err = totp.GenerateCode(key.Secret(), now)
	if err != nil {
		panic(err)
	}
	verified, err := auth.VerifyTOTP(ctx, login.PreAuthToken, "alice", code)
	if err != nil {
		panic(err)
	}
	p, err := auth.CheckBearer(ctx, verified.AuthToken)
	fmt.Println(p.Kind, p.Name, "passed TOTP:", p.TOTP, err)
	// Output:
	// recovery codes: 10
	// TOTP required: true token: false
	// user alice passed TOTP: true <nil>
}
