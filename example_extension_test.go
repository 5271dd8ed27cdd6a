package nmauth_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/nmauth/nmauth"
)

// An application's own first factor, a magic link say, logs users in
// through the Extension it registered: a user with TOTP on still gets a
// pre-auth token, and an Extension no Config registered can do nothing.
func ExampleExtension() {
	magicLink := new(nmauth.Extension) // the factor's powers, once registered
	auth, err := nmauth.New(nmauth.Config{
		Store:      nmauth.NewMemoryStore(),
		Secrets:    [][]byte{rootSecret},
		Extensions: []*nmauth.Extension{magicLink},
	})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	auth.Admin().CreateUser(ctx, "alice", "correct horse battery")

	// The link checked out: alice, without TOTP, gets a user token.
	login, err := magicLink.Login(ctx, "alice")
	if err != nil {
		panic(err)
	}
	p, _ := auth.CheckBearer(ctx, login.AuthToken)
	fmt.Println(p.Kind, p.Name, "second factor:", p.TOTP)

	// Code that was never registered mints nothing.
	_, err = new(nmauth.Extension).Login(ctx, "alice")
	fmt.Println(errors.Is(err, nmauth.ErrNotRegistered))
	// Output:
	// user alice second factor: false
	// true
}

// A host (a machine that joins networks) logs in with its id and the
// secret its client drew, and gets a host token for the rest of the API.
func ExampleAuthenticator_LoginHost() {
	auth, err := nmauth.New(nmauth.Config{Store: nmauth.NewMemoryStore(), Secrets: [][]byte{rootSecret}})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	const id, secret = "5f0e6a52-6a3b-4c55-9d8e-2b1f0c7d9a11", "OZ4RMLEXNPYK6X2KFKQ3A7TBJ5VWEM3D"
	if err := auth.Admin().CreateHost(ctx, id, "", secret); err != nil {
		panic(err)
	}
	login, err := auth.LoginHost(ctx, id, "", secret)
	if err != nil {
		panic(err)
	}
	p, _ := auth.CheckBearer(ctx, login.AuthToken)
	fmt.Println(p.Kind, p.Name)
	_, err = auth.LoginHost(ctx, id, "", "a wrong secret of some length")
	fmt.Println(err)
	// Output:
	// host 5f0e6a52-6a3b-4c55-9d8e-2b1f0c7d9a11
	// nmauth: invalid credentials
}
