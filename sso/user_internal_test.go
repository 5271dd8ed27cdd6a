package sso

import (
	"context"
	"errors"
	"testing"

	"github.com/nmauth/nmauth"
)

// TestCreateUserNamedByEmail: with CreateUsers, an identity without a
// preferred_username is named by its e-mail only when the provider
// verified it, and then linked.
func TestCreateUserNamedByEmail(t *testing.T) {
	auth, err := nmauth.New(nmauth.Config{Store: nmauth.NewMemoryStore(), Secrets: [][]byte{[]byte("sso-test-root-secret-0123456789abcdef")}})
	if err != nil {
		t.Fatal(err)
	}
	s := &SSO{cfg: Config{Store: NewMemoryStore(), CreateUsers: true}, auth: auth}
	ctx := context.Background()
	id := Identity{Issuer: "https://op", Subject: "s1", Email: "dave@example.com", Claims: map[string]any{"email": "dave@example.com"}}
	if _, err := s.user(ctx, id); !errors.Is(err, errDomain) {
		t.Fatalf("an unverified e-mail as the name: %v, want a refusal", err)
	}
	if users, _ := auth.Admin().ListUsers(ctx, "", 10); len(users) != 0 {
		t.Fatalf("a user was made: %v", users)
	}
	id.EmailVerified = true
	name, err := s.user(ctx, id)
	if err != nil || name != "dave@example.com" {
		t.Fatalf("a verified e-mail: %q, %v", name, err)
	}
	if linked, err := s.cfg.Store.Link(ctx, "https://op", "s1"); linked != name || err != nil {
		t.Fatalf("link: %q, %v", linked, err)
	}
}
