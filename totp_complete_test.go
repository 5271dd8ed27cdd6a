package nmauth_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pquerna/otp"
	"github.com/pquerna/otp/totp"

	"github.com/nmauth/nmauth"
)

// codeAt computes the TOTP code of an otpauth URL's secret at a time, with
// pquerna/otp rather than the code under test.
func codeAt(t *testing.T, otpauthURL string, at time.Time) string {
	t.Helper()
	u, err := url.Parse(otpauthURL)
	if err != nil {
		t.Fatal(err)
	}
	c, err := totp.GenerateCodeCustom(u.Query().Get("secret"), at, totp.ValidateOpts{Period: 30, Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestCompleteTOTPEnrollsAndReplaces walks the one method that turns TOTP
// on and replaces it: a first enrollment needs no current code, a user
// replacing their own second factor needs one, and the master key does
// not.
func TestCompleteTOTPEnrollsAndReplaces(t *testing.T) {
	secret := make([]byte, 32)
	rand.Read(secret)
	masterKey := hex.EncodeToString(secret[:20])
	mk, _ := nmauth.NewMasterKey(masterKey, false, nil)
	var now atomic.Int64
	now.Store(time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC).Unix())
	clock := func() time.Time { return time.Unix(now.Load(), 0) }
	auth, err := nmauth.New(nmauth.Config{Store: nmauth.NewMemoryStore(), Secrets: [][]byte{secret}, MasterKey: mk, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := auth.Admin().CreateUser(ctx, "alice", "correct horse battery"); err != nil {
		t.Fatal(err)
	}
	login, err := auth.LoginUser(ctx, "alice", "correct horse battery")
	if err != nil {
		t.Fatal(err)
	}
	alice, err := auth.CheckBearer(ctx, login.AuthToken)
	if err != nil {
		t.Fatal(err)
	}

	first, err := auth.InitTOTP(ctx, alice, "alice")
	if err != nil {
		t.Fatal(err)
	}
	done, err := auth.CompleteTOTP(ctx, alice, "alice", first.URL, first.Signature, codeAt(t, first.URL, clock()), "")
	if err != nil || len(done.RecoveryCodes) != 10 || done.AuthToken == "" {
		t.Fatalf("first enrollment: %+v, %v", done, err)
	}
	aliceTOTP, err := auth.CheckBearer(ctx, done.AuthToken)
	if err != nil || !aliceTOTP.TOTP {
		t.Fatalf("the fresh token: %+v, %v", aliceTOTP, err)
	}

	now.Add(30) // a later step: each is accepted once
	second, err := auth.InitTOTP(ctx, aliceTOTP, "alice")
	if err != nil {
		t.Fatal(err)
	}
	newCode := codeAt(t, second.URL, clock())
	if _, err := auth.CompleteTOTP(ctx, aliceTOTP, "alice", second.URL, second.Signature, newCode, ""); !errors.Is(err, nmauth.ErrForbidden) {
		t.Fatalf("replacing without a current code: %v, want ErrForbidden", err)
	}
	done, err = auth.CompleteTOTP(ctx, aliceTOTP, "alice", second.URL, second.Signature, newCode, codeAt(t, first.URL, clock()))
	if err != nil || done.AuthToken == "" {
		t.Fatalf("replacing with a current code: %+v, %v", done, err)
	}

	master, err := auth.CheckBearer(ctx, masterKey)
	if err != nil {
		t.Fatal(err)
	}
	third, err := auth.InitTOTP(ctx, master, "alice")
	if err != nil {
		t.Fatal(err)
	}
	done, err = auth.CompleteTOTP(ctx, master, "alice", third.URL, third.Signature, codeAt(t, third.URL, clock()), "")
	if err != nil || done.AuthToken != "" || len(done.RecoveryCodes) != 10 {
		t.Fatalf("the master key replacing it without a current code: %+v, %v", done, err)
	}
}
