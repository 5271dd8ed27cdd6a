package nmauth_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/nmauth/nmauth"
)

const importedPassword = "imported password"

// Hashes of importedPassword made by other programs than the code under
// test: the argon2 reference command (argon2 saltysaltysalt16 -i -t 2 -m 10
// -p 1 -l 32 -e) and Python's hashlib (scrypt, pbkdf2_hmac).
var importedHashes = []struct {
	format, hash, weak string
}{
	{"argon2i", "$argon2i$v=19$m=1024,t=2,p=1$c2FsdHlzYWx0eXNhbHQxNg$p5WDkoCgIKhhb17B0gQ2jEMOHEzo8D0i0Y68K7yj4e4", "argon2i with m=1024,t=2"},
	{"scrypt", "$scrypt$ln=10,r=8,p=1$c2FsdHlzYWx0eXNhbHQxNg$IyMRJYaO05epMSRuv1nhK1ZGIu5JPnBqLuk3FAIgmYY", "scrypt N=2^10"},
	{"pbkdf2-sha256", "$pbkdf2-sha256$i=1000,l=32$c2FsdHlzYWx0eXNhbHQxNg$VyskA9i4O8a/sUhIxEsOQk8J/MOSjwmU99UUa5Jc94A", "1000 iterations"},
	{"django", "pbkdf2_sha256$870000$DjangoSalt123$T8WDGiTu6GVjaA3dS/EZ6d15GAEUmAeua5KMN+HVFf0=", ""},
}

// TestImportUserHashes: a user imported with a hash of each known format
// logs in with the password it had and not with another; the first right
// login replaces the hash with nmauth's argon2id; weak hashes are named.
func TestImportUserHashes(t *testing.T) {
	bcrypt5, err := bcrypt.GenerateFromPassword([]byte(importedPassword), 5)
	if err != nil {
		t.Fatal(err)
	}
	bcrypt4, _ := bcrypt.GenerateFromPassword([]byte(importedPassword), 4)
	cases := append(importedHashes[:len(importedHashes):len(importedHashes)],
		struct{ format, hash, weak string }{"bcrypt cost 5", string(bcrypt5), "bcrypt cost 5 below 10"},
		struct{ format, hash, weak string }{"bcrypt cost 4", string(bcrypt4), "bcrypt cost 4"},
	)
	for _, tc := range cases {
		t.Run(tc.format, func(t *testing.T) {
			f := newFixture(t)
			ctx := context.Background()
			r, err := f.auth.Admin().ImportUser(ctx, nmauth.ImportedUser{Name: "Imported", PasswordHash: tc.hash})
			if err != nil || !r.Added || r.Name != "imported" {
				t.Fatalf("ImportUser: %+v, %v", r, err)
			}
			if tc.weak == "" && r.Weak != "" || !strings.Contains(r.Weak, tc.weak) {
				t.Errorf("Weak %q, want %q", r.Weak, tc.weak)
			}
			wantError(t, f.loginUser("imported", importedPassword+"!"), http.StatusUnauthorized)
			if u, _ := f.store.GetUser(ctx, "imported"); u.PasswordHash != tc.hash {
				t.Fatalf("a wrong password changed the hash to %q", u.PasswordHash)
			}
			f.userToken("imported", importedPassword)
			u, _ := f.store.GetUser(ctx, "imported")
			if !strings.HasPrefix(u.PasswordHash, "$argon2id$v=19$m=19456,t=2,p=1$") {
				t.Fatalf("after the right login the hash is %q, want nmauth's argon2id", u.PasswordHash)
			}
			f.userToken("imported", importedPassword)
			// The same record again changes nothing.
			if r, err := f.auth.Admin().ImportUser(ctx, nmauth.ImportedUser{Name: "imported", PasswordHash: tc.hash}); err != nil || r.Added {
				t.Fatalf("second ImportUser: %+v, %v", r, err)
			}
			if again, _ := f.store.GetUser(ctx, "imported"); again.PasswordHash != u.PasswordHash {
				t.Error("a second import changed the stored hash")
			}
		})
	}
}

// TestImportUserRefused: a record that cannot be read is refused whole,
// and nothing of it is stored.
func TestImportUserRefused(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		in   nmauth.ImportedUser
		want error
	}{
		{"unknown format", nmauth.ImportedUser{Name: "u1", PasswordHash: "{SSHA}abcdefgh"}, nmauth.ErrInvalidImport},
		{"md5 crypt", nmauth.ImportedUser{Name: "u2", PasswordHash: "$1$saltsalt$qjXMvbEw8oaL.CzflDugX/"}, nmauth.ErrInvalidImport},
		{"truncated bcrypt", nmauth.ImportedUser{Name: "u3", PasswordHash: "$2a$05$abc"}, nmauth.ErrInvalidImport},
		{"bcrypt cost 3", nmauth.ImportedUser{Name: "u4", PasswordHash: "$2a$03$" + strings.Repeat("a", 53)}, nmauth.ErrInvalidImport},
		{"scrypt too big", nmauth.ImportedUser{Name: "u5", PasswordHash: "$scrypt$ln=24,r=8,p=1$c2FsdHlzYWx0eXNhbHQxNg$IyMRJYaO05epMSRuv1nhK1ZGIu5JPnBqLuk3FAIgmYY"}, nmauth.ErrInvalidImport},
		{"pbkdf2 wrong length", nmauth.ImportedUser{Name: "u6", PasswordHash: "$pbkdf2-sha256$i=1000,l=16$c2FsdHlzYWx0eXNhbHQxNg$VyskA9i4O8a/sUhIxEsOQk8J/MOSjwmU99UUa5Jc94A"}, nmauth.ErrInvalidImport},
		{"hash and password", nmauth.ImportedUser{Name: "u7", PasswordHash: importedHashes[0].hash, Password: importedPassword}, nmauth.ErrInvalidImport},
		{"bad TOTP secret", nmauth.ImportedUser{Name: "u8", Password: importedPassword, TOTPSecret: "not base32!"}, nmauth.ErrInvalidImport},
		{"short TOTP secret", nmauth.ImportedUser{Name: "u9", Password: importedPassword, TOTPSecret: "JBSWY3DP"}, nmauth.ErrInvalidImport},
		{"bad name", nmauth.ImportedUser{Name: "", Password: importedPassword}, nmauth.ErrInvalidUsername},
	} {
		r, err := f.auth.Admin().ImportUser(ctx, tc.in)
		if !errors.Is(err, tc.want) || r.Added {
			t.Errorf("%s: %+v, %v, want %v", tc.name, r, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), importedPassword) {
			t.Errorf("%s: the error shows the password: %v", tc.name, err)
		}
		if _, err := f.store.GetUser(ctx, tc.in.Name); !errors.Is(err, nmauth.ErrNotFound) {
			t.Errorf("%s: stored anyway (%v)", tc.name, err)
		}
	}
}

// TestImportUserTOTPDisabledNoPassword: an imported TOTP secret is sealed
// and asked for at login, with codes computed from the secret the other
// system kept; a disabled user answers as a wrong password; a user with
// no password has none that logs in; a plaintext password is hashed.
func TestImportUserTOTPDisabledNoPassword(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	const secret = "JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP"
	hash, _ := bcrypt.GenerateFromPassword([]byte(importedPassword), 5)
	imports := []nmauth.ImportedUser{
		{Name: "totp", PasswordHash: string(hash), TOTPSecret: strings.ToLower(secret)},
		{Name: "off", PasswordHash: string(hash), Disabled: true},
		{Name: "sso"},
		{Name: "plain", Password: "short"},
	}
	for _, in := range imports {
		if r, err := f.auth.Admin().ImportUser(ctx, in); err != nil || !r.Added {
			t.Fatalf("ImportUser(%q): %+v, %v", in.Name, r, err)
		}
	}
	u, _ := f.store.GetUser(ctx, "totp")
	if !u.TOTPEnabled() || strings.Contains(string(u.TOTPSecret), secret) || strings.Contains(string(u.TOTPSecret), string(mustBase32(t, secret))) {
		t.Fatalf("TOTP secret stored as %q", u.TOTPSecret)
	}
	pre := f.preAuthToken("totp", importedPassword)
	wantStatus(t, f.verifyTOTP("totp", pre, f.code(secret, 0)), http.StatusOK)

	wantError(t, f.loginUser("off", importedPassword), http.StatusUnauthorized)
	wantError(t, f.loginUser("sso", ""), http.StatusBadRequest)
	wantError(t, f.loginUser("sso", "any password at all"), http.StatusUnauthorized)
	if u, _ := f.store.GetUser(ctx, "plain"); !strings.HasPrefix(u.PasswordHash, "$argon2id$") {
		t.Fatalf("a plaintext password is stored as %q", u.PasswordHash)
	}
	if r, _ := f.auth.Admin().PlanUserImport(ctx, nmauth.ImportedUser{Name: "plain2", Password: "short"}); !r.Added || !strings.Contains(r.Weak, "shorter") {
		t.Errorf("a short password is not reported weak: %+v", r)
	}
	f.userToken("plain", "short")
}

// TestImportHost: a host imported with Netmaker's bcrypt of its netclient
// secret logs in with it and its MAC address; its first login moves the
// hash to the machine digest; its memberships are handed over once; a
// plan writes nothing.
func TestImportHost(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	const id, secret = "0b7e4c2d-1f3a-4b5c-8d6e-7f8091a2b3c4", "JRW6NMVDMIZKJ3TUGQFQ4EQOEQPJ7N6B"
	hash, _ := bcrypt.GenerateFromPassword([]byte(secret), 5)
	members := map[string]bool{}
	add := func(_ context.Context, network, host string) (bool, error) {
		if host != id {
			t.Errorf("membership for %q", host)
		}
		was := members[network]
		members[network] = true
		return !was, nil
	}
	in := nmauth.ImportedHost{ID: id, MACAddress: "AA-BB-CC-DD-EE-FF", PasswordHash: string(hash), Networks: []string{"net-1", "net-2"}}
	plan, err := f.auth.Admin().PlanHostImport(ctx, in, nil)
	if err != nil || !plan.Added || plan.Memberships != 2 || !strings.Contains(plan.Weak, "bcrypt cost 5") {
		t.Fatalf("PlanHostImport: %+v, %v", plan, err)
	}
	if _, err := f.store.GetHost(ctx, id); !errors.Is(err, nmauth.ErrNotFound) {
		t.Fatalf("the plan stored the host (%v)", err)
	}
	if r, err := f.auth.Admin().ImportHost(ctx, in, add); err != nil || !r.Added || r.Memberships != 2 {
		t.Fatalf("ImportHost: %+v, %v", r, err)
	}
	if r, err := f.auth.Admin().ImportHost(ctx, in, add); err != nil || r.Added || r.Memberships != 0 || r.Weak != "" {
		t.Fatalf("second ImportHost: %+v, %v", r, err)
	}
	h, _ := f.store.GetHost(ctx, id)
	if h.MACAddress != "aa:bb:cc:dd:ee:ff" {
		t.Errorf("MAC address %q", h.MACAddress)
	}
	if _, err := f.auth.LoginHost(ctx, id, "aa:bb:cc:dd:ee:ff", "JRW6NMVDMIZKJ3TUGQFQ4EQOEQPJ7N6C"); !errors.Is(err, nmauth.ErrInvalidCredentials) {
		t.Fatalf("wrong secret: %v", err)
	}
	if _, err := f.auth.LoginHost(ctx, id, "aa:bb:cc:dd:ee:ff", secret); err != nil {
		t.Fatalf("LoginHost: %v", err)
	}
	if h, _ := f.store.GetHost(ctx, id); !strings.HasPrefix(h.PasswordHash, "$nmauth-hmac-sha256$") {
		t.Fatalf("after the right login the host's credential is %q, want the machine digest", h.PasswordHash)
	}
	f.clock.Advance(time.Second)
	if _, err := f.auth.LoginHost(ctx, id, "aa:bb:cc:dd:ee:ff", secret); err != nil {
		t.Fatalf("LoginHost on the digest: %v", err)
	}

	for _, bad := range []nmauth.ImportedHost{
		{ID: "h2", PasswordHash: "$md5$nope"},
		{ID: "h3"},
		{ID: "h4", Password: secret, MACAddress: "not a mac"},
		{ID: "h5", Password: secret, Networks: []string{"bad network"}},
	} {
		if r, err := f.auth.Admin().ImportHost(ctx, bad, add); err == nil || r.Added {
			t.Errorf("ImportHost(%+v): %+v, %v", bad, r, err)
		}
		if _, err := f.store.GetHost(ctx, bad.ID); !errors.Is(err, nmauth.ErrNotFound) {
			t.Errorf("%s stored anyway", bad.ID)
		}
	}
}

// TestImportConflicts: records whose names would be one account are
// found, users by PRECIS UsernameCaseMapped and hosts by case, each group
// in the order given; names that do not prepare, and names that stay
// apart, are in no group.
func TestImportConflicts(t *testing.T) {
	admin := newFixture(t).auth.Admin()
	for _, tc := range []struct {
		name  string
		kind  nmauth.PrincipalKind
		names []string
		want  [][]int
	}{
		{"users by case", nmauth.KindUser, []string{"Alice", "bob", "alice"}, [][]int{{0, 2}}},
		{"users by width", nmauth.KindUser, []string{"ｂｏｂ", "Bob", "carol", "BOB"}, [][]int{{0, 1, 3}}},
		{"two groups in order", nmauth.KindUser, []string{"Dan", "Erin", "erin", "dan"}, [][]int{{0, 3}, {1, 2}}},
		{"users apart", nmauth.KindUser, []string{"alice", "alicia", "", "al ice"}, nil},
		{"host UUIDs by case", nmauth.KindHost, []string{"5C1E4C2D-1F3A-4B5C-8D6E-7F8091A2B3C4", "web-1", "5c1e4c2d-1f3a-4b5c-8d6e-7f8091a2b3c4"}, [][]int{{0, 2}}},
		{"host ids by case", nmauth.KindHost, []string{"Web-1", "web-1", "web-2"}, [][]int{{0, 1}}},
		{"hosts apart", nmauth.KindHost, []string{"web-1", "web-2", "bad id"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := admin.ImportConflicts(tc.kind, tc.names)
			if !slices.EqualFunc(got, tc.want, slices.Equal) {
				t.Errorf("ImportConflicts = %v, want %v", got, tc.want)
			}
		})
	}
}
