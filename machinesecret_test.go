package nmauth_test

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"encoding/base64"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/nmauth/nmauth"
	"golang.org/x/crypto/argon2"
	"golang.org/x/crypto/bcrypt"
)

// netclientPassword makes a host password as netclient does: 32 random
// bytes in standard base32, cut to 32 characters.
func netclientPassword() string {
	b := make([]byte, 32)
	rand.Read(b)
	return base32.StdEncoding.EncodeToString(b)[:32]
}

// countingStore counts the host reads and writes that reach the Store, and
// can be told to fail every write.
type countingStore struct {
	*nmauth.MemoryStore
	reads, writes atomic.Int64
	failWrites    atomic.Bool
}

func (s *countingStore) GetHost(ctx context.Context, id string) (nmauth.Host, error) {
	s.reads.Add(1)
	return s.MemoryStore.GetHost(ctx, id)
}

func (s *countingStore) UpdateHost(ctx context.Context, id string, fn func(*nmauth.Host) error) error {
	if s.failWrites.Load() {
		return errors.New("disk full")
	}
	var wrote bool
	err := s.MemoryStore.UpdateHost(ctx, id, func(h *nmauth.Host) error {
		if err := fn(h); err != nil {
			return err
		}
		wrote = true
		return nil
	})
	if wrote {
		s.writes.Add(1)
	}
	return err
}

func (s *countingStore) UpdateHosts(ctx context.Context, updates []nmauth.HostUpdate) error {
	if s.failWrites.Load() {
		return errors.New("disk full")
	}
	if err := s.MemoryStore.UpdateHosts(ctx, updates); err != nil {
		return err
	}
	for _, u := range updates {
		if u.Err == nil {
			s.writes.Add(1)
		}
	}
	return nil
}

func (s *countingStore) counts() (reads, writes int64) { return s.reads.Load(), s.writes.Load() }

type machineFixture struct {
	auth  *nmauth.Authenticator
	store *countingStore
	ctx   context.Context
}

func newMachineFixture(t *testing.T, store *countingStore, secrets ...[]byte) machineFixture {
	t.Helper()
	if len(secrets) == 0 {
		secrets = [][]byte{testSecret(1)}
	}
	auth, err := nmauth.New(nmauth.Config{Store: store, Secrets: secrets, ClientRate: -1})
	if err != nil {
		t.Fatal(err)
	}
	ctx := nmauth.WithClientAddr(context.Background(), netip.MustParseAddr("192.0.2.10"))
	return machineFixture{auth: auth, store: store, ctx: ctx}
}

// flush waits for the host writes the logins queued.
func (f machineFixture) flush(t *testing.T) {
	t.Helper()
	if err := f.auth.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func (f machineFixture) stored(t *testing.T, id string) string {
	t.Helper()
	f.flush(t)
	h, err := f.store.MemoryStore.GetHost(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return h.PasswordHash
}

const machinePrefix = "$nmauth-hmac-sha256$k="

// TestMachineSecretStored: a host created or given a password that a
// program drew at random keeps a keyed digest, never the secret; any
// other keeps argon2id.
func TestMachineSecretStored(t *testing.T) {
	f := newMachineFixture(t, &countingStore{MemoryStore: nmauth.NewMemoryStore()})
	secret := netclientPassword()
	if err := f.auth.Admin().CreateHost(f.ctx, "h1", "", secret); err != nil {
		t.Fatal(err)
	}
	if got := f.stored(t, "h1"); !strings.HasPrefix(got, machinePrefix) || strings.Contains(got, secret) {
		t.Errorf("stored %q, want a machine-secret digest", got)
	}
	if err := f.auth.Admin().CreateHost(f.ctx, "h2", "", "a host password I chose"); err != nil {
		t.Fatal(err)
	}
	if got := f.stored(t, "h2"); !strings.HasPrefix(got, "$argon2id$") {
		t.Errorf("stored %q for a chosen password, want argon2id", got)
	}
	if err := f.auth.Admin().SetHostPassword(f.ctx, "h2", secret); err != nil {
		t.Fatal(err)
	}
	if got := f.stored(t, "h2"); !strings.HasPrefix(got, machinePrefix) {
		t.Errorf("stored %q after a new random password, want a digest", got)
	}
	if _, err := f.auth.LoginHost(f.ctx, "h2", "", secret); err != nil {
		t.Errorf("login with the new password: %v", err)
	}
}

// TestMachineLoginWritesNothing: the first login from a new address
// reads the host and writes once, to know that address, and the logins
// from that address after it read and write nothing.
func TestMachineLoginWritesNothing(t *testing.T) {
	f := newMachineFixture(t, &countingStore{MemoryStore: nmauth.NewMemoryStore()})
	secret := netclientPassword()
	if err := f.auth.Admin().CreateHost(f.ctx, "h1", "", secret); err != nil {
		t.Fatal(err)
	}
	login := func() (reads, writes int64) {
		t.Helper()
		r0, w0 := f.store.counts()
		got, err := f.auth.LoginHost(f.ctx, "h1", "", secret)
		if err != nil || got.AuthToken == "" {
			t.Fatalf("LoginHost = %+v, %v", got, err)
		}
		if p, err := f.auth.CheckBearer(f.ctx, got.AuthToken); err != nil || p.Name != "h1" || p.Kind != nmauth.KindHost {
			t.Fatalf("CheckBearer = %+v, %v", p, err)
		}
		f.flush(t)
		r1, w1 := f.store.counts()
		return r1 - r0, w1 - w0
	}
	// The first login from an address reads the host, as does its token's
	// check, and writes once, to know that address.
	if reads, writes := login(); reads != 2 || writes != 1 {
		t.Errorf("first login from an address: %d reads, %d writes; want 2 and 1", reads, writes)
	}
	// The logins after it are granted from what it read, as its write
	// left the host, within StatusCacheTTL.
	for i := range 3 {
		if reads, writes := login(); reads != 0 || writes != 0 {
			t.Errorf("clean login %d: %d reads, %d writes; want 0 and 0", i, reads, writes)
		}
	}
	// A wrong secret is counted, and the next right one forgets it: one
	// write each.
	if _, err := f.auth.LoginHost(f.ctx, "h1", "", netclientPassword()); !errors.Is(err, nmauth.ErrInvalidCredentials) {
		t.Fatalf("wrong secret: %v", err)
	}
	if _, writes := login(); writes != 1 {
		t.Errorf("login after a failure wrote %d times, want 1", writes)
	}
	if _, writes := login(); writes != 0 {
		t.Errorf("clean login wrote %d times, want 0", writes)
	}
}

// TestMachineFailuresCounted: wrong machine secrets are counted per client
// and throttled as passwords are; a store that cannot count them answers
// 503, never a verdict, while a right secret still logs in from a store it
// can only read.
func TestMachineFailuresCounted(t *testing.T) {
	f := newMachineFixture(t, &countingStore{MemoryStore: nmauth.NewMemoryStore()})
	secret := netclientPassword()
	if err := f.auth.Admin().CreateHost(f.ctx, "h1", "", secret); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if _, err := f.auth.LoginHost(f.ctx, "h1", "", netclientPassword()); !errors.Is(err, nmauth.ErrInvalidCredentials) {
			t.Fatalf("wrong secret %d: %v", i+1, err)
		}
	}
	h, _ := f.store.MemoryStore.GetHost(context.Background(), "h1")
	if nmauth.StateOf(&h.State).PasswordFailures != 5 {
		t.Errorf("%d failures stored, want 5", nmauth.StateOf(&h.State).PasswordFailures)
	}
	for _, pw := range []string{netclientPassword(), secret} {
		if _, err := f.auth.LoginHost(f.ctx, "h1", "", pw); !errors.Is(err, nmauth.ErrThrottled) {
			t.Errorf("sixth attempt: %v, want throttled", err)
		}
	}
	other := nmauth.WithClientAddr(context.Background(), netip.MustParseAddr("192.0.2.99"))
	if _, err := f.auth.LoginHost(other, "h1", "", secret); err != nil {
		t.Errorf("right secret from another address: %v", err)
	}

	f.flush(t)
	f.store.failWrites.Store(true)
	if _, err := f.auth.LoginHost(other, "h1", "", netclientPassword()); !errors.Is(err, nmauth.ErrStoreUnavailable) {
		t.Errorf("wrong secret, store cannot write: %v, want ErrStoreUnavailable", err)
	}
	if _, err := f.auth.LoginHost(other, "h1", "", secret); err != nil {
		t.Errorf("right secret, store can only read: %v", err)
	}
}

// TestMachineSecretRevocation: the lean path mints under the generation
// it read, so revoking, disabling and a new password end its tokens, and
// a disabled host's right secret answers as a wrong one.
func TestMachineSecretRevocation(t *testing.T) {
	f := newMachineFixture(t, &countingStore{MemoryStore: nmauth.NewMemoryStore()})
	secret := netclientPassword()
	if err := f.auth.Admin().CreateHost(f.ctx, "h1", "", secret); err != nil {
		t.Fatal(err)
	}
	for _, end := range []struct {
		name string
		do   func() error
	}{
		{"revoke", func() error { return f.auth.Admin().RevokeHostTokens(f.ctx, "h1") }},
		{"new password", func() error { secret = netclientPassword(); return f.auth.Admin().SetHostPassword(f.ctx, "h1", secret) }},
		{"disable", func() error { return f.auth.Admin().DisableHost(f.ctx, "h1") }},
	} {
		got, err := f.auth.LoginHost(f.ctx, "h1", "", secret)
		if err != nil {
			t.Fatalf("%s: login: %v", end.name, err)
		}
		if err := end.do(); err != nil {
			t.Fatal(err)
		}
		if _, err := f.auth.CheckBearer(f.ctx, got.AuthToken); !errors.Is(err, nmauth.ErrUnauthenticated) {
			t.Errorf("%s: token still accepted (%v)", end.name, err)
		}
	}
	if _, err := f.auth.LoginHost(f.ctx, "h1", "", secret); !errors.Is(err, nmauth.ErrInvalidCredentials) {
		t.Errorf("disabled host's right secret: %v, want ErrInvalidCredentials", err)
	}
	if _, err := f.auth.LoginHost(f.ctx, "nobody", "", secret); !errors.Is(err, nmauth.ErrUnknownHost) {
		t.Errorf("unknown host: %v, want ErrUnknownHost", err)
	}
}

// argonPHC hashes password with argon2id as another system would, in PHC
// string form.
func argonPHC(password string, m, t uint32) string {
	salt := make([]byte, 16)
	rand.Read(salt)
	key := argon2.IDKey([]byte(password), salt, t, m, 1, 32)
	b64 := base64.RawStdEncoding
	return fmt.Sprintf("$argon2id$v=19$m=%d,t=%d,p=1$%s$%s", m, t, b64.EncodeToString(salt), b64.EncodeToString(key))
}

// TestMachineSecretUpgrade: a host whose machine secret is kept under
// argon2id or an imported bcrypt hash moves to the keyed digest at its
// next successful login, and logs in after that without a write; one
// whose secret does not qualify stays on argon2id.
func TestMachineSecretUpgrade(t *testing.T) {
	secret := netclientPassword()
	bc, err := bcrypt.GenerateFromPassword([]byte(secret), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	chosen := "a host password I chose"
	bcChosen, err := bcrypt.GenerateFromPassword([]byte(chosen), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, stored, secret, want string
	}{
		{"argon2id", argonPHC(secret, 19456, 2), secret, machinePrefix},
		{"bcrypt", string(bc), secret, machinePrefix},
		{"bcrypt, chosen password", string(bcChosen), chosen, "$argon2id$"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newMachineFixture(t, &countingStore{MemoryStore: nmauth.NewMemoryStore()})
			h := nmauth.Host{ID: "h1", PasswordHash: c.stored}
			nmauth.StateOf(&h.State).Generation = 7
			if err := f.store.CreateHost(context.Background(), h); err != nil {
				t.Fatal(err)
			}
			if _, err := f.auth.LoginHost(f.ctx, "h1", "", "wrong-"+c.secret); !errors.Is(err, nmauth.ErrInvalidCredentials) {
				t.Fatalf("wrong secret: %v", err)
			}
			if f.stored(t, "h1") != c.stored {
				t.Fatal("a wrong secret changed the stored hash")
			}
			if _, err := f.auth.LoginHost(f.ctx, "h1", "", c.secret); err != nil {
				t.Fatalf("login: %v", err)
			}
			if got := f.stored(t, "h1"); !strings.HasPrefix(got, c.want) {
				t.Fatalf("stored %q after login, want %s…", got, c.want)
			}
			if _, err := f.auth.LoginHost(f.ctx, "h1", "", c.secret); err != nil {
				t.Fatalf("login after the upgrade: %v", err)
			}
			if c.want == machinePrefix {
				_, w0 := f.store.counts()
				if _, err := f.auth.LoginHost(f.ctx, "h1", "", c.secret); err != nil {
					t.Fatal(err)
				}
				if _, w1 := f.store.counts(); w1 != w0 {
					t.Errorf("login after the upgrade wrote %d times", w1-w0)
				}
			}
		})
	}
}

// TestMachineSecretRotation: a digest under an older root secret verifies
// while that secret is configured and moves to the first at the next
// login; HostsUnderOlderSecrets counts what has not moved yet. Dropping
// the older secret too soon is the server's fault (500), never a 401.
func TestMachineSecretRotation(t *testing.T) {
	oldSecret, newSecret := testSecret(1), testSecret(2)
	store := &countingStore{MemoryStore: nmauth.NewMemoryStore()}
	before := newMachineFixture(t, store, oldSecret)
	secret := netclientPassword()
	for _, id := range []string{"h1", "h2"} {
		if err := before.auth.Admin().CreateHost(before.ctx, id, "", secret); err != nil {
			t.Fatal(err)
		}
	}
	rotated := newMachineFixture(t, store, newSecret, oldSecret)
	if n, err := rotated.auth.Admin().HostsUnderOlderSecrets(rotated.ctx); n != 2 || err != nil {
		t.Fatalf("HostsUnderOlderSecrets = %d, %v; want 2", n, err)
	}
	old := rotated.stored(t, "h1")
	if _, err := rotated.auth.LoginHost(rotated.ctx, "h1", "", secret); err != nil {
		t.Fatalf("login under the rotated ring: %v", err)
	}
	if got := rotated.stored(t, "h1"); got == old || !strings.HasPrefix(got, machinePrefix) {
		t.Errorf("digest %q did not move to the first root secret", got)
	}
	if n, err := rotated.auth.Admin().HostsUnderOlderSecrets(rotated.ctx); n != 1 || err != nil {
		t.Errorf("HostsUnderOlderSecrets = %d, %v; want 1", n, err)
	}
	after := newMachineFixture(t, store, newSecret)
	if _, err := after.auth.LoginHost(after.ctx, "h1", "", secret); err != nil {
		t.Errorf("login with the old secret dropped, digest moved: %v", err)
	}
	if _, err := after.auth.LoginHost(after.ctx, "h2", "", secret); !errors.Is(err, nmauth.ErrDataFault) {
		t.Errorf("login of a host left under a dropped root secret: %v, want ErrDataFault", err)
	}
}

// TestMachineSecretNeverRefusedUnderLoad: many right logins of one host at
// once, from many addresses, while an attacker guesses from another,
// never answer a right secret as wrong.
func TestMachineSecretNeverRefusedUnderLoad(t *testing.T) {
	f := newMachineFixture(t, &countingStore{MemoryStore: nmauth.NewMemoryStore()})
	secret := netclientPassword()
	if err := f.auth.Admin().CreateHost(f.ctx, "h1", "", secret); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var refused atomic.Int64
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := nmauth.WithClientAddr(context.Background(), netip.AddrFrom4([4]byte{198, 51, 100, byte(i)}))
			for range 200 {
				if _, err := f.auth.LoginHost(ctx, "h1", "", secret); err != nil {
					refused.Add(1)
					t.Errorf("right secret refused: %v", err)
					return
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		ctx := nmauth.WithClientAddr(context.Background(), netip.MustParseAddr("203.0.113.1"))
		for range 200 {
			_, err := f.auth.LoginHost(ctx, "h1", "", netclientPassword())
			if err == nil {
				t.Error("a wrong secret logged in")
				return
			}
		}
	}()
	wg.Wait()
	if refused.Load() != 0 {
		t.Errorf("%d right logins refused", refused.Load())
	}
}

// TestMachineNodeLogin: a node login on the lean path asks for membership
// only after the secret is right, and a refused membership counts
// nothing.
func TestMachineNodeLogin(t *testing.T) {
	store := &countingStore{MemoryStore: nmauth.NewMemoryStore()}
	var asked atomic.Int64
	auth, err := nmauth.New(nmauth.Config{Store: store, Secrets: [][]byte{testSecret(1)}, ClientRate: -1,
		NodeMember: func(_ context.Context, network, _ string) (bool, error) {
			asked.Add(1)
			return network == "net1", nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := nmauth.WithClientAddr(context.Background(), netip.MustParseAddr("192.0.2.10"))
	secret := netclientPassword()
	if err := auth.Admin().CreateHost(ctx, "h1", "", secret); err != nil {
		t.Fatal(err)
	}
	if _, err := auth.LoginNode(ctx, "net1", "h1", "", netclientPassword()); !errors.Is(err, nmauth.ErrInvalidCredentials) || asked.Load() != 0 {
		t.Errorf("wrong secret: %v, membership asked %d times", err, asked.Load())
	}
	if got, err := auth.LoginNode(ctx, "net1", "h1", "", secret); err != nil || got.Network != "net1" {
		t.Errorf("LoginNode = %+v, %v", got, err)
	}
	if err := auth.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	_, w0 := store.counts()
	if _, err := auth.LoginNode(ctx, "net2", "h1", "", secret); !errors.Is(err, nmauth.ErrForbidden) {
		t.Errorf("not a member: %v, want ErrForbidden", err)
	}
	if _, w1 := store.counts(); w1 != w0 {
		t.Errorf("a refused membership wrote %d times", w1-w0)
	}
}
