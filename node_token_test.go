package nmauth_test

import (
	"context"
	"crypto/rand"
	"errors"
	"testing"

	"github.com/nmauth/nmauth"
)

// TestIssueNodeTokenTakesContext checks that IssueNodeToken, like every
// other method, takes the caller's context first, and mints nothing once
// that context is done.
func TestIssueNodeTokenTakesContext(t *testing.T) {
	secret := make([]byte, 32)
	rand.Read(secret)
	auth, err := nmauth.New(nmauth.Config{Store: nmauth.NewMemoryStore(), Secrets: [][]byte{secret}})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := auth.IssueNodeToken(t.Context(), "net-1", "node-1")
	if err != nil {
		t.Fatal(err)
	}
	if p, err := auth.CheckBearer(t.Context(), tok); err != nil || p.Kind != nmauth.KindNode || p.Name != "node-1" || p.Network != "net-1" {
		t.Errorf("the token checks as %+v, %v; want node node-1 of net-1", p, err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if tok, err := auth.IssueNodeToken(ctx, "net-1", "node-1"); !errors.Is(err, context.Canceled) || tok != "" {
		t.Errorf("with a cancelled context: %q, %v; want no token and context.Canceled", tok, err)
	}
}
