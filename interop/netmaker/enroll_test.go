package netmaker

import (
	"bytes"
	"crypto/rand"
	"database/sql"
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/gravitl/netmaker/models"
)

// serverConfigJSON is the server config nmauthd answers a join with
// (--netmaker-server-config), in Netmaker's field names.
const serverConfigJSON = `{"Server":"nm.example.com","Broker":"mqtts://broker.nm.example.com:8883","APIHost":"api.nm.example.com","Version":"v1.4.0","Is_EE":false}`

// joiningHost is what netclient join posts: its configuration, whose
// host fields are Netmaker's models.Host with the password it drew (32
// base32 characters of random bytes, as netclient's RandomString), and
// its WireGuard and traffic private keys beside them.
func joiningHost(t *testing.T) (body map[string]any, id, secret string) {
	t.Helper()
	raw := make([]byte, 32)
	rand.Read(raw)
	h := models.Host{
		ID: uuid.New(), HostPass: base32.StdEncoding.EncodeToString(raw)[:32], Name: "edge-" + rand.Text()[:6],
		Version: "v1.4.0", OS: "linux", ListenPort: 51821, MTU: 1420,
		MacAddress:       net.HardwareAddr{0x02, 0x42, 0xac, 0x11, raw[0], raw[1]},
		TrafficKeyPublic: []byte("traffic-public-key"),
	}
	b, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &body); err != nil {
		t.Fatal(err)
	}
	body["privatekey"] = base64.StdEncoding.EncodeToString(raw)
	body["traffickeyprivate"] = base64.StdEncoding.EncodeToString(raw[:16])
	return body, h.ID.String(), h.HostPass
}

// register posts body to the register route of the server the token
// names, as netclient does (over plain HTTP here), from client when it is
// not empty (the server trusts the loopback proxy that names it).
func register(t *testing.T, token string, body any, client string) (int, []byte) {
	t.Helper()
	raw, err := base64.StdEncoding.DecodeString(token)
	var tok models.EnrollmentToken
	if err != nil || json.Unmarshal(raw, &tok) != nil || tok.Server == "" {
		t.Fatalf("token %q does not decode as netclient decodes it", token)
	}
	b, _ := json.Marshal(body)
	req, err := http.NewRequest(http.MethodPost, "http://"+tok.Server+"/api/v1/host/register/"+token, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if client != "" {
		req.Header.Set("X-Forwarded-For", client)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

// TestNmctlEnrollmentKeys: the real nmctl, with the master key, creates
// an enrollment key at nmauthd --wire netmaker, lists it without its
// secret, and deletes it; between, a host joins with netclient's request
// shape and token, reads the answer into Netmaker's RegisterResponse,
// and logs in with the password it chose; the same id cannot join again;
// the deleted key admits no one; no key secret is in the database file.
func TestNmctlEnrollmentKeys(t *testing.T) {
	cfgFile := filepath.Join(t.TempDir(), "server.json")
	if err := os.WriteFile(cfgFile, []byte(serverConfigJSON), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, "netmaker", "--netmaker-server-config="+cfgFile)
	home := t.TempDir()
	nmctl := func(args ...string) string {
		t.Helper()
		out, err := runNmctl(t, home, args...)
		if err != nil {
			t.Fatalf("nmctl %v: %v\n%s", args, err, out)
		}
		return out
	}
	nmctl("context", "set", "master", "--endpoint", s.url, "--master_key", masterKey)
	nmctl("context", "use", "master")
	out := nmctl("enrollment_key", "create", "--uses", "2", "--networks", "net-1", "--tags", "ci-key")
	var made models.EnrollmentKey
	if err := json.Unmarshal([]byte(out[strings.Index(out, "{"):]), &made); err != nil || made.Value == "" || made.Token == "" ||
		made.UsesRemaining != 2 || made.Type != models.Uses || len(made.Networks) != 1 || made.Tags[0] != "ci-key" {
		t.Fatalf("nmctl enrollment_key create printed %q (%v)", out, err)
	}
	raw, _ := base64.StdEncoding.DecodeString(made.Token)
	var tok models.EnrollmentToken
	json.Unmarshal(raw, &tok)
	secret := strings.Split(strings.TrimPrefix(tok.Value, "nmauth_ek_"), "_")[1]

	out = nmctl("enrollment_key", "list")
	var listed []models.EnrollmentKey
	if err := json.Unmarshal([]byte(out[strings.Index(out, "["):]), &listed); err != nil || len(listed) != 1 ||
		listed[0].Value != made.Value || listed[0].Token != "" || strings.Contains(out, secret) {
		t.Fatalf("nmctl enrollment_key list printed %q (%v), want the key by its id and no secret", out, err)
	}

	body, id, password := joiningHost(t)
	status, answer := register(t, made.Token, body, "")
	var reg models.RegisterResponse
	if err := json.Unmarshal(answer, &reg); status != http.StatusOK || err != nil ||
		reg.ServerConf.Server != "nm.example.com" || reg.ServerConf.Broker != "mqtts://broker.nm.example.com:8883" ||
		reg.RequestedHost.ID.String() != id || reg.RequestedHost.HostPass != "" {
		t.Fatalf("register: %d %s (%v)", status, answer, err)
	}
	if strings.Contains(string(answer), body["privatekey"].(string)) {
		t.Fatalf("the register answer echoes the host's private key: %s", answer)
	}
	login := s.success(s.post("/api/hosts/adm/authenticate", "", models.AuthParams{ID: id, Password: password,
		MacAddress: net.HardwareAddr(mustBase64(t, body["macaddress"].(string))).String()}))
	if got := into[models.SuccessfulLoginResponse](t, login); got.ID != id {
		t.Fatalf("the joined host's login answered %+v", got)
	}

	other, _, _ := joiningHost(t)
	other["id"] = id
	status, answer = register(t, made.Token, other, "")
	var refused models.ErrorResponse
	if json.Unmarshal(answer, &refused); status != http.StatusBadRequest || refused.Message != "host already exists" {
		t.Fatalf("a second register of the same id: %d %s", status, answer)
	}
	s.success(s.post("/api/hosts/adm/authenticate", "", models.AuthParams{ID: id, Password: password}))

	out = nmctl("enrollment_key", "delete", made.Value)
	if out = nmctl("enrollment_key", "list"); strings.Contains(out, made.Value) {
		t.Fatalf("nmctl enrollment_key list after delete printed %q", out)
	}
	fresh, _, _ := joiningHost(t)
	status, answer = register(t, made.Token, fresh, "")
	if json.Unmarshal(answer, &refused); status != http.StatusBadRequest || refused.Message != "invalid enrollment key" {
		t.Fatalf("register with the deleted key: %d %s", status, answer)
	}

	// A key that expired, and one revoked (nmauth's own route), admit no
	// one either.
	out = nmctl("enrollment_key", "create", "--expiration", strconv.FormatInt(time.Now().Add(2*time.Second).Unix(), 10), "--tags", "short-lived")
	var expiring models.EnrollmentKey
	if err := json.Unmarshal([]byte(out[strings.Index(out, "{"):]), &expiring); err != nil || expiring.Type != models.TimeExpiration {
		t.Fatalf("nmctl enrollment_key create --expiration printed %q (%v)", out, err)
	}
	revoked := createKey(t, s, 3)
	raw, _ = base64.StdEncoding.DecodeString(revoked)
	json.Unmarshal(raw, &tok)
	revokedID := strings.Split(strings.TrimPrefix(tok.Value, "nmauth_ek_"), "_")[0]
	if st, b := s.post("/api/v1/enrollment-keys/"+revokedID+"/revoke", masterKey, nil); st != http.StatusOK {
		t.Fatalf("revoke: %d %s", st, b)
	}
	time.Sleep(time.Until(expiring.Expiration) + 100*time.Millisecond)
	for name, token := range map[string]string{"expired": expiring.Token, "revoked": revoked} {
		fresh, _, _ := joiningHost(t)
		status, answer = register(t, token, fresh, "")
		if json.Unmarshal(answer, &refused); status != http.StatusBadRequest || refused.Message != "invalid enrollment key" {
			t.Errorf("register with the %s key: %d %s", name, status, answer)
		}
	}

	// The database files hold neither the key's secret nor the host's.
	files, _ := filepath.Glob(filepath.Join(s.dir, "nmauth.db*"))
	var stored []byte
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		stored = append(stored, b...)
	}
	if !bytes.Contains(stored, []byte(id)) {
		t.Fatalf("the scan of %v did not find the joined host", files)
	}
	for name, v := range map[string]string{"key secret": secret, "host password": password} {
		if bytes.Contains(stored, []byte(v)) {
			t.Errorf("the %s is in the database in the clear", name)
		}
	}
}

func mustBase64(t *testing.T, s string) []byte {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestEnrollmentKeyUsesAtOnce: a key of uses uses, under joins sent at
// once, each from its own client address (through the loopback proxy the
// servers trust), admits exactly uses hosts: on SQLite, on PostgreSQL,
// and on two nmauthd replicas on one PostgreSQL schema, the joins split
// between them. Every other join is refused as an invalid key, and no key
// secret is in the PostgreSQL rows.
func TestEnrollmentKeyUsesAtOnce(t *testing.T) {
	const uses, joins = 5, 40
	cases := []struct {
		name     string
		replicas int
		postgres bool
	}{
		{"SQLite", 1, false},
		{"Postgres", 1, true},
		{"TwoReplicasOnPostgres", 2, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			db := filepath.Join(dir, "nmauth.db")
			var pgDSN string
			if tc.postgres {
				pgDSN = postgresSchema(t)
				db = pgDSN
			}
			secret := make([]byte, 32)
			rand.Read(secret)
			env := append(os.Environ(), "MASTER_KEY="+masterKey, "NMAUTH_SECRET="+hex.EncodeToString(secret), "NMAUTH_ENV=")
			var servers []*server
			for range tc.replicas {
				servers = append(servers, serveDB(t, dir, db, env, "netmaker", "--trusted-proxy=127.0.0.1"))
			}
			token := createKey(t, servers[0], uses)
			statuses := make([]int, joins)
			var wg sync.WaitGroup
			start := make(chan struct{})
			for i := range joins {
				body, _, _ := joiningHost(t)
				// Each join goes to its replica through the token of that
				// replica's address.
				tok := retarget(t, token, servers[i%len(servers)].url)
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					statuses[i], _ = register(t, tok, body, fmt.Sprintf("10.1.%d.%d", i/200, i%200+1))
				}()
			}
			close(start)
			wg.Wait()
			counts := map[int]int{}
			for _, st := range statuses {
				counts[st]++
			}
			if counts[http.StatusOK] != uses || counts[http.StatusBadRequest] != joins-uses {
				t.Fatalf("joins answered %v, want %d × 200 and %d × 400", counts, uses, joins-uses)
			}
			if tc.postgres {
				assertNoSecretInRows(t, pgDSN, token)
			}
		})
	}
}

// createKey makes a key of uses uses with the master key, as nmctl does,
// and returns its token.
func createKey(t *testing.T, s *server, uses int) string {
	t.Helper()
	st, body := s.post("/api/v1/enrollment-keys", masterKey, models.APIEnrollmentKey{UsesRemaining: uses, Networks: []string{"net-1"}, Tags: []string{"fleet"}})
	var k models.EnrollmentKey
	if err := json.Unmarshal(body, &k); st != http.StatusOK || err != nil || k.Token == "" {
		t.Fatalf("create: %d %s", st, body)
	}
	return k.Token
}

// retarget returns token naming the server at base instead.
func retarget(t *testing.T, token, base string) string {
	t.Helper()
	raw, _ := base64.StdEncoding.DecodeString(token)
	var tok models.EnrollmentToken
	json.Unmarshal(raw, &tok)
	u, _ := url.Parse(base)
	tok.Server = u.Host
	b, _ := json.Marshal(tok)
	return base64.StdEncoding.EncodeToString(b)
}

// postgresSchema returns NMAUTH_TEST_POSTGRES with a schema of the test's
// own as its search path, or skips without a server.
func postgresSchema(t *testing.T) string {
	t.Helper()
	dsn := os.Getenv("NMAUTH_TEST_POSTGRES")
	if dsn == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("NMAUTH_TEST_POSTGRES is not set in CI")
		}
		t.Skip(`NMAUTH_TEST_POSTGRES is not set; to run: export NMAUTH_TEST_POSTGRES="$(bash .ci/postgres)"`)
	}
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal("NMAUTH_TEST_POSTGRES is not a URL")
	}
	schema := "nmauth_enroll_" + strings.ToLower(rand.Text()[:12])
	createSchema(t, dsn, schema)
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// assertNoSecretInRows reads every row of the enrollment keys and hosts
// as text and fails if the key's secret is in any.
func assertNoSecretInRows(t *testing.T, dsn, token string) {
	t.Helper()
	raw, _ := base64.StdEncoding.DecodeString(token)
	var tok models.EnrollmentToken
	json.Unmarshal(raw, &tok)
	secret := strings.Split(strings.TrimPrefix(tok.Value, "nmauth_ek_"), "_")[1]
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var rows []string
	for _, table := range []string{"nmauth_enrollment_keys", "nmauth_hosts"} {
		r, err := db.Query("SELECT CAST(t.* AS TEXT) FROM " + table + " t")
		if err != nil {
			t.Fatal(err)
		}
		for r.Next() {
			var row string
			r.Scan(&row)
			rows = append(rows, row)
		}
		r.Close()
	}
	all := strings.Join(rows, "\n")
	if !strings.Contains(all, "fleet") || strings.Contains(all, secret) {
		t.Fatalf("the rows hold the key's secret, or the scan read no key: %s", all)
	}
}
