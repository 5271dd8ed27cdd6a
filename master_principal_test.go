package nmauth_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"testing"

	"github.com/nmauth/nmauth"
)

// TestMasterPrincipalIsNoUser checks that the master key and a user named
// "master" are told apart by every field an application might read: the
// user logs in as any user does, and only the master key is IsMaster.
func TestMasterPrincipalIsNoUser(t *testing.T) {
	secret := make([]byte, 32)
	rand.Read(secret)
	masterKey := hex.EncodeToString(secret[:20])
	mk, err := nmauth.NewMasterKey(masterKey, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	auth, err := nmauth.New(nmauth.Config{Store: nmauth.NewMemoryStore(), Secrets: [][]byte{secret}, MasterKey: mk})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := auth.Admin().CreateUser(ctx, "master", "correct horse battery"); err != nil {
		t.Fatalf("a user named master: %v", err)
	}
	login, err := auth.LoginUser(ctx, "master", "correct horse battery")
	if err != nil {
		t.Fatal(err)
	}
	user, err := auth.CheckBearer(ctx, login.AuthToken)
	if err != nil {
		t.Fatal(err)
	}
	master, err := auth.CheckBearer(ctx, masterKey)
	if err != nil {
		t.Fatal(err)
	}

	if user.Kind != nmauth.KindUser || user.Name != "master" || user.IsMaster() {
		t.Errorf("the user named master: %+v, IsMaster %v; want a user named master", user, user.IsMaster())
	}
	if master.Kind != nmauth.KindMaster || master.Name != "" || !master.IsMaster() {
		t.Errorf("the master key: %+v, IsMaster %v; want kind master, no name", master, master.IsMaster())
	}
	if user.Name == master.Name {
		t.Errorf("both have the name %q", user.Name)
	}
	for _, tc := range []struct {
		p    nmauth.Principal
		want string
	}{
		{master, `{"kind":"master"}`},
		{nmauth.Principal{Kind: nmauth.KindUser, Name: "master"}, `{"kind":"user","name":"master"}`},
	} {
		if b, _ := json.Marshal(tc.p); string(b) != tc.want {
			t.Errorf("JSON %s, want %s", b, tc.want)
		}
	}
}
