package nmauth_test

import (
	"context"
	"errors"
	"log"
	"net/http"
	"os"

	"github.com/nmauth/nmauth"
)

func Example_mounting() {
	ctx := context.Background()
	secrets, err := nmauth.ParseSecrets(os.Getenv("NMAUTH_SECRET")) // 32+ random bytes in hex or base64, kept outside the database
	if err != nil {
		log.Fatal(err)
	}
	master, err := nmauth.NewMasterKey(os.Getenv("MASTER_KEY"), false, nil) // 32+ characters; or a nil MasterKey for none
	if err != nil {
		log.Fatal(err)
	}
	auth, err := nmauth.New(nmauth.Config{
		Store:     nmauth.NewMemoryStore(), // or an SQLStore, or your own
		Secrets:   secrets,
		MasterKey: master,
	})
	if err != nil {
		log.Fatal(err)
	}
	// A database that holds accounts opens only under the root secret that wrote it.
	if err := auth.CheckSecrets(ctx); err != nil {
		log.Fatal(err)
	}
	// A first account, for the login route; ErrExists once it is there.
	if err := auth.Admin().CreateUser(ctx, "admin", os.Getenv("ADMIN_PASSWORD")); err != nil && !errors.Is(err, nmauth.ErrExists) {
		log.Fatal(err)
	}
	usersOnly := auth.Require(nmauth.KindUser, nmauth.KindMaster) // checks the bearer and its kind

	mux := http.NewServeMux()
	mux.Handle("/api/", auth.Handler()) // the login and TOTP routes; your more specific routes still win
	mux.Handle("GET /api/networks", auth.Middleware(networks{auth}))
	mux.Handle("DELETE /api/networks/{network}", usersOnly(networks{auth}))
	log.Fatal(http.ListenAndServe("127.0.0.1:8081", mux))
}

// networks is one of the application's own routes.
type networks struct{ auth *nmauth.Authenticator }

func (n networks) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p, _ := nmauth.FromContext(r.Context()) // who is asking: master, user, host or node
	if r.Method == http.MethodDelete && r.PathValue("network") == "default" {
		n.auth.WriteError(w, r, nmauth.ErrForbidden) // the same envelope and status as nmauth's own routes
		return
	}
	n.auth.WriteResponse(w, r, http.StatusOK, "networks of "+p.Name, []string{"default"})
}
