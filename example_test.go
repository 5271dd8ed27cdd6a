package nmauth_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/nmauth/nmauth"
)

// rootSecret stands for 32 random bytes kept outside the database.
var rootSecret = []byte("an example root secret, 32 bytes+")

func Example() {
	auth, err := nmauth.New(nmauth.Config{
		Store:   nmauth.NewMemoryStore(),
		Secrets: [][]byte{rootSecret},
	})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	if err := auth.CreateUser(ctx, "Alice", "correct horse battery"); err != nil {
		panic(err)
	}

	login, err := auth.LoginUser(ctx, "alice", "correct horse battery")
	if err != nil {
		panic(err)
	}
	p, err := auth.CheckBearer(ctx, login.AuthToken)
	fmt.Println(p.Kind, p.Name, err)

	_, err = auth.LoginUser(ctx, "alice", "wrong password")
	fmt.Println(err)
	// Output:
	// user alice <nil>
	// nmauth: invalid credentials
}

func ExampleAuthenticator_Handler() {
	auth, _ := nmauth.New(nmauth.Config{Store: nmauth.NewMemoryStore(), Secrets: [][]byte{rootSecret}})
	auth.CreateUser(context.Background(), "alice", "correct horse battery")

	// The application's mux: nmauth's routes beside the application's own.
	mux := http.NewServeMux()
	mux.Handle("/api/", auth.Handler())
	mux.Handle("GET /api/networks", auth.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, _ := nmauth.FromContext(r.Context())
		fmt.Fprintf(w, "networks of %s %s", p.Kind, p.Name)
	})))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	body := `{"username":"alice","password":"correct horse battery"}`
	resp, _ := http.Post(srv.URL+"/api/users/adm/authenticate", "application/json", strings.NewReader(body))
	var env struct {
		Code     int
		Response struct{ AuthToken, UserName string }
	}
	json.NewDecoder(resp.Body).Decode(&env)
	resp.Body.Close()
	fmt.Println(env.Code, env.Response.UserName)

	req, _ := http.NewRequest("GET", srv.URL+"/api/networks", nil)
	req.Header.Set("Authorization", "Bearer "+env.Response.AuthToken)
	resp, _ = http.DefaultClient.Do(req)
	var out bytes.Buffer
	out.ReadFrom(resp.Body)
	resp.Body.Close()
	fmt.Println(out.String())
	// Output:
	// 200 alice
	// networks of user alice
}

func ExampleBearerToken() {
	h := http.Header{}
	h.Set("Authorization", "bearer abc.def.ghi")
	tok, err := nmauth.BearerToken(h)
	fmt.Println(tok, err)

	h.Set("Authorization", "Basic YWxpY2U6cHc=")
	_, err = nmauth.BearerToken(h)
	fmt.Println(err)
	// Output:
	// abc.def.ghi <nil>
	// nmauth: unauthenticated
}
