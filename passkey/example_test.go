package passkey_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/nmauth/nmauth"
	"github.com/nmauth/nmauth/passkey"
)

// Example wires passkeys into an Authenticator and mounts their routes
// beside its own: the one Store answers the Authenticator's question about
// a second factor and keeps the passkeys.
func Example() {
	secret := make([]byte, 32)
	rand.Read(secret)
	store := passkey.NewMemoryStore()
	ext := new(nmauth.Extension) // the passkeys' powers, once registered
	auth, err := nmauth.New(nmauth.Config{
		Extensions:   []*nmauth.Extension{ext},
		Store:        nmauth.NewMemoryStore(),
		Secrets:      [][]byte{secret},
		SecondFactor: passkey.SecondFactor(store),
	})
	if err != nil {
		log.Fatal(err)
	}
	pk, err := passkey.New(passkey.Config{
		Extension:    ext,
		Store:        store,
		RPID:         "example.com",
		Origins:      []string{"https://auth.example.com"},
		Passwordless: true,
	})
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/api/", pk.Handler())
	srv := httptest.NewServer(mux)
	defer srv.Close()

	if err := auth.Admin().CreateUser(context.Background(), "alice", "correct horse battery"); err != nil {
		log.Fatal(err)
	}
	for _, path := range []string{"/api/users/adm/passkey/begin", "/api/users/adm/authenticate"} {
		body := strings.NewReader(`{"username":"alice","password":"correct horse battery"}`)
		resp, err := http.Post(srv.URL+path, "application/json", body)
		if err != nil {
			log.Fatal(err)
		}
		resp.Body.Close()
		fmt.Println(path, resp.StatusCode)
	}
	// Output:
	// /api/users/adm/passkey/begin 200
	// /api/users/adm/authenticate 200
}
