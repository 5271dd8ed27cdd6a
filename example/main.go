// Command example is a small network manager that takes its authentication
// from nmauth: it mounts the nmauth handler on its own mux, beside its own
// bearer-protected routes, and issues node tokens from its node route.
//
//	go run ./example
//
// It keeps everything in memory and prints a demo user, a demo host and
// the master key when it starts.
package main

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"log"
	"log/slog"
	"net/http"
	"os"
	"sync"

	"github.com/nmauth/nmauth"
)

// networkManager is the application: networks and their nodes.
type networkManager struct {
	auth *nmauth.Authenticator

	mu       sync.Mutex
	networks map[string][]string // network -> node ids
	nodeKeys map[string]string   // node id -> node key
}

func main() {
	addr := "127.0.0.1:8081"
	if v := os.Getenv("ADDR"); v != "" {
		addr = v
	}
	master := randomHex(24)
	auth, err := nmauth.New(nmauth.Config{
		Store:     nmauth.NewMemoryStore(),
		Secrets:   [][]byte{randomBytes(32)},
		MasterKey: mustMasterKey(master),
		Logger:    slog.New(slog.NewTextHandler(os.Stderr, nil)),
	})
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	userPassword, hostPassword := randomHex(8), randomHex(8)
	if err := auth.Admin().CreateUser(ctx, "demo", userPassword); err != nil {
		log.Fatal(err)
	}
	if err := auth.Admin().CreateHost(ctx, "demo-host", "", hostPassword); err != nil {
		log.Fatal(err)
	}
	app := &networkManager{
		auth:     auth,
		networks: map[string][]string{"home": {"node-1"}},
		nodeKeys: map[string]string{"node-1": randomHex(8)},
	}

	mux := http.NewServeMux()
	mux.Handle("/api/", auth.Handler())
	mux.Handle("GET /api/networks", auth.Middleware(http.HandlerFunc(app.listNetworks)))
	// The node route checks a secret, so it gets the login routes'
	// per-client attempt limit.
	mux.Handle("POST /api/nodes/{network}/authenticate", auth.Limit(http.HandlerFunc(app.authenticateNode)))

	log.Printf("demo user: demo / %s", userPassword)
	log.Printf("demo host: demo-host / %s", hostPassword)
	log.Printf("node node-1 in network home, key %s", app.nodeKeys["node-1"])
	log.Printf("master key: %s", master)
	log.Printf("listening on http://%s", addr)
	log.Fatal(http.ListenAndServe(addr, mux))
}

// listNetworks is the application's own route, open to any principal.
func (app *networkManager) listNetworks(w http.ResponseWriter, r *http.Request) {
	p, _ := nmauth.FromContext(r.Context())
	app.mu.Lock()
	defer app.mu.Unlock()
	names := []string{}
	for n := range app.networks {
		if p.Kind != nmauth.KindNode || p.Network == n {
			names = append(names, n)
		}
	}
	app.auth.WriteResponse(w, r, http.StatusOK, "networks", map[string]any{"principal": p, "networks": names})
}

// authenticateNode checks a node's key the application's way and asks
// nmauth for a node token.
func (app *networkManager) authenticateNode(w http.ResponseWriter, r *http.Request) {
	var req struct {
		ID  string `json:"id"`
		Key string `json:"key"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4096)).Decode(&req); err != nil {
		app.auth.WriteResponse(w, r, http.StatusBadRequest, "malformed JSON body", nil)
		return
	}
	network := r.PathValue("network")
	app.mu.Lock()
	want, known := app.nodeKeys[req.ID]
	member := false
	for _, id := range app.networks[network] {
		member = member || id == req.ID
	}
	app.mu.Unlock()
	if !known || !member || subtle.ConstantTimeCompare([]byte(want), []byte(req.Key)) != 1 {
		app.auth.WriteError(w, r, nmauth.ErrInvalidCredentials)
		return
	}
	tok, err := app.auth.IssueNodeToken(r.Context(), network, req.ID)
	if err != nil {
		app.auth.WriteError(w, r, err)
		return
	}
	app.auth.WriteResponse(w, r, http.StatusOK, "node authenticated", map[string]string{"authToken": tok})
}

func mustMasterKey(key string) *nmauth.MasterKey {
	mk, err := nmauth.NewMasterKey(key, false, nil)
	if err != nil {
		log.Fatal(err)
	}
	return mk
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	rand.Read(b) // never fails on supported platforms
	return b
}

func randomHex(n int) string { return hex.EncodeToString(randomBytes(n)) }
