package sso

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/go-jose/go-jose/v4"
	"golang.org/x/oauth2"
)

// TestIDTokenRefusals feeds identify ID tokens that a provider would not
// send, signed by a key the test publishes itself as the provider's: a
// wrong nonce, another audience, an expired token, another issuer, and
// a token signed by a key the provider does not publish. Each is refused;
// the right one is accepted, so the refusals are the checks' own.
func TestIDTokenRefusals(t *testing.T) {
	key, _ := rsa.GenerateKey(rand.Reader, 2048)
	other, _ := rsa.GenerateKey(rand.Reader, 2048)
	var issuer string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "k1", Algorithm: "RS256", Use: "sig"}}})
	}))
	defer srv.Close()
	issuer = srv.URL
	ctx := context.Background()
	s := &SSO{cfg: Config{GroupsClaim: "groups"}}
	op := &provider{verifier: oidc.NewVerifier(issuer, oidc.NewRemoteKeySet(ctx, srv.URL), &oidc.Config{ClientID: "nmauth"})}
	sign := func(k *rsa.PrivateKey, edit func(map[string]any)) *oauth2.Token {
		claims := map[string]any{"iss": issuer, "sub": "id1", "aud": "nmauth", "nonce": "n-1",
			"iat": time.Now().Unix(), "exp": time.Now().Add(time.Minute).Unix(),
			"email": "alice@example.com", "email_verified": true, "groups": []string{"ops"}}
		edit(claims)
		signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: k, KeyID: "k1"}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		payload, _ := json.Marshal(claims)
		jws, err := signer.Sign(payload)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := jws.CompactSerialize()
		return (&oauth2.Token{AccessToken: "at"}).WithExtra(map[string]any{"id_token": raw})
	}
	id, err := s.identify(ctx, op, sign(key, func(map[string]any) {}), "n-1")
	if err != nil || id.Subject != "id1" || id.Email != "alice@example.com" || !id.EmailVerified || len(id.Groups) != 1 {
		t.Fatalf("the right token: %+v, %v", id, err)
	}
	for name, c := range map[string]struct {
		tok  *oauth2.Token
		want error
	}{
		"a wrong nonce":    {sign(key, func(m map[string]any) { m["nonce"] = "n-2" }), errNonce},
		"another audience": {sign(key, func(m map[string]any) { m["aud"] = "someone-else" }), errIDToken},
		"expired":          {sign(key, func(m map[string]any) { m["exp"] = time.Now().Add(-time.Minute).Unix() }), errIDToken},
		"another issuer":   {sign(key, func(m map[string]any) { m["iss"] = "https://evil.example" }), errIDToken},
		"another key":      {sign(other, func(map[string]any) {}), errIDToken},
		"no ID token":      {&oauth2.Token{AccessToken: "at"}, errIDToken},
	} {
		if _, err := s.identify(ctx, op, c.tok, "n-1"); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", name, err, c.want)
		}
	}
}
