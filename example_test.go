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
	if err := auth.Admin().CreateUser(ctx, "Alice", "correct horse battery"); err != nil {
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
	auth.Admin().CreateUser(context.Background(), "alice", "correct horse battery")

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

func ExampleAuthenticator_WriteResponse() {
	for _, wire := range []nmauth.WireProfile{nmauth.WireSpec, nmauth.WireNetmaker} {
		auth, _ := nmauth.New(nmauth.Config{Store: nmauth.NewMemoryStore(), Secrets: [][]byte{rootSecret}, Wire: wire})
		rec := httptest.NewRecorder()
		auth.WriteResponse(rec, httptest.NewRequest("GET", "/api/networks", nil), http.StatusOK, "networks", []string{"home"})
		fmt.Print(wire, " ", rec.Code, " ", rec.Body)
	}
	// Output:
	// spec 200 {"code":200,"message":"networks","response":["home"]}
	// netmaker 200 {"Code":200,"Message":"networks","Response":["home"]}
}

func ExampleAuthenticator_WriteError() {
	auth, _ := nmauth.New(nmauth.Config{Store: nmauth.NewMemoryStore(), Secrets: [][]byte{rootSecret}})
	for _, err := range []error{nmauth.ErrForbidden, nmauth.ErrUnauthenticated, fmt.Errorf("reading networks: %w", nmauth.ErrNotFound)} {
		rec := httptest.NewRecorder()
		auth.WriteError(rec, httptest.NewRequest("GET", "/api/networks/x", nil), err)
		fmt.Printf("%d %q %s", rec.Code, rec.Header().Get("WWW-Authenticate"), rec.Body)
	}
	// Output:
	// 403 "" {"code":403,"message":"forbidden"}
	// 401 "Bearer realm=\"nmauth\"" {"code":401,"message":"missing or invalid bearer credential"}
	// 404 "" {"code":404,"message":"user not found"}
}

func ExampleAuthenticator_Limit() {
	auth, _ := nmauth.New(nmauth.Config{
		Store:       nmauth.NewMemoryStore(),
		Secrets:     [][]byte{rootSecret},
		ClientBurst: 2, // and 1 more attempt per second
	})
	// A node route that checks a key of the application's own.
	nodeLogin := auth.Limit(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth.WriteError(w, r, nmauth.ErrInvalidCredentials)
	}))
	for range 3 {
		rec := httptest.NewRecorder()
		nodeLogin.ServeHTTP(rec, httptest.NewRequest("POST", "/api/nodes/home/authenticate", nil))
		fmt.Printf("%d Retry-After=%q\n", rec.Code, rec.Header().Get("Retry-After"))
	}
	// Output:
	// 401 Retry-After=""
	// 401 Retry-After=""
	// 429 Retry-After="1"
}

func ExampleAuthenticator_Require() {
	auth, _ := nmauth.New(nmauth.Config{Store: nmauth.NewMemoryStore(), Secrets: [][]byte{rootSecret}})
	auth.Admin().CreateUser(context.Background(), "alice", "correct horse battery")
	user, _ := auth.LoginUser(context.Background(), "alice", "correct horse battery")
	node, _ := auth.IssueNodeToken(context.Background(), "home", "node-1")

	// One step: the bearer is checked and its kind with it.
	nodesOnly := auth.Require(nmauth.KindNode)
	checkin := nodesOnly(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, _ := nmauth.FromContext(r.Context())
		auth.WriteResponse(w, r, http.StatusOK, "checked in", p.Name)
	}))
	for _, token := range []string{node, user.AuthToken, "not-a-token", ""} {
		req := httptest.NewRequest("POST", "/api/nodes/home/checkin", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		rec := httptest.NewRecorder()
		checkin.ServeHTTP(rec, req)
		fmt.Print(rec.Body)
	}
	// Output:
	// {"code":200,"message":"checked in","response":"node-1"}
	// {"code":403,"message":"forbidden"}
	// {"code":401,"message":"missing or invalid bearer credential"}
	// {"code":401,"message":"missing or invalid bearer credential"}
}

func ExampleConfig_onEvent() {
	auth, _ := nmauth.New(nmauth.Config{
		Store:   nmauth.NewMemoryStore(),
		Secrets: [][]byte{rootSecret},
		OnEvent: func(ctx context.Context, e nmauth.Event) {
			// ctx is the request's: a request id a middleware put there
			// ties the event to its request line.
			fmt.Println(e.Type, e.Kind, e.Name, e.Client)
		},
	})
	auth.Admin().CreateUser(context.Background(), "alice", "correct horse battery")

	req := httptest.NewRequest("POST", "/api/users/adm/authenticate",
		strings.NewReader(`{"username":"alice","password":"not her password"}`))
	req.Header.Set("Content-Type", "application/json")
	req.RemoteAddr = "198.51.100.7:40000"
	auth.Handler().ServeHTTP(httptest.NewRecorder(), req)

	// Outside a request, the event has the caller's context and no client.
	// An admin change emits its own event, and the revocation it makes.
	auth.Admin().DisableUser(context.Background(), "alice")
	// Output:
	// user.created user alice invalid IP
	// login.failed user alice 198.51.100.7
	// user.disabled user alice invalid IP
	// tokens.revoked user alice invalid IP
}

func ExampleAdmin_ListUsers() {
	auth, _ := nmauth.New(nmauth.Config{Store: nmauth.NewMemoryStore(), Secrets: [][]byte{rootSecret}})
	ctx := context.Background()
	for _, name := range []string{"carol", "alice", "bob"} {
		auth.Admin().CreateUser(ctx, name, "correct horse battery")
	}
	auth.Admin().DisableUser(ctx, "bob")

	for after := ""; ; {
		page, err := auth.Admin().ListUsers(ctx, after, 2)
		if err != nil {
			panic(err)
		}
		for _, u := range page {
			fmt.Println(u.Name, "disabled:", u.Disabled, "totp:", u.TOTPEnabled)
		}
		if len(page) < 2 {
			break
		}
		after = page[len(page)-1].Name
	}
	// Output:
	// alice disabled: false totp: false
	// bob disabled: true totp: false
	// carol disabled: false totp: false
}

func ExampleConfig_nodeTokenValid() {
	removed := map[string]bool{} // the application's own record of removed nodes
	auth, _ := nmauth.New(nmauth.Config{
		Store:   nmauth.NewMemoryStore(),
		Secrets: [][]byte{rootSecret},
		NodeTokenValid: func(ctx context.Context, p nmauth.Principal) (bool, error) {
			return !removed[p.Network+"/"+p.Name], nil
		},
	})
	tok, _ := auth.IssueNodeToken(context.Background(), "home", "node-1")
	_, err := auth.CheckBearer(context.Background(), tok)
	fmt.Println(err)

	removed["home/node-1"] = true
	_, err = auth.CheckBearer(context.Background(), tok)
	fmt.Println(err)
	// Output:
	// <nil>
	// nmauth: unauthenticated
}

func ExampleParseSecrets() {
	// NMAUTH_SECRET="<new>,<old>": the new secret signs, both verify. Each
	// came from openssl rand -base64 32 or openssl rand -hex 32.
	env := "Qf7G+/wCNzUiWoGoeffRrc4BMOLHjcTkHPS7WMBqlWI=,7954a7a35bf82b6280790a220592c2d1c3561ac3f147ba39371ce63441943606"
	secrets, err := nmauth.ParseSecrets(env)
	fmt.Println(len(secrets), len(secrets[0]), err)

	_, err = nmauth.ParseSecrets(env + ",c2hvcnQ=")
	fmt.Println(err)
	_, err = nmauth.ParseSecrets(strings.Repeat("0", 64))
	fmt.Println(err)
	// Output:
	// 2 32 <nil>
	// nmauth: root secret 3 of the list: 5 bytes, need at least 32
	// nmauth: root secret: does not look random: it has too few distinct characters (a short alphabet or a repeated pattern); make one with: openssl rand -base64 32 (or head -c 32 /dev/urandom | base64)
}

// An application's own table beside nmauth's, written once for both
// databases: Rebind gives each the placeholders it takes.
func ExampleDialect_Rebind() {
	const q = `UPDATE memberships SET role = ? WHERE network = ? AND host_id = ?`
	fmt.Println(nmauth.DialectSQLite.Rebind(q))
	fmt.Println(nmauth.DialectPostgres.Rebind(q))
	fmt.Println(nmauth.DialectPostgres.Rebind(`SELECT 1`))
	// Output:
	// UPDATE memberships SET role = ? WHERE network = ? AND host_id = ?
	// UPDATE memberships SET role = $1 WHERE network = $2 AND host_id = $3
	// SELECT 1
}
