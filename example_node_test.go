package nmauth_test

import (
	"context"
	"fmt"

	"github.com/nmauth/nmauth"
)

// nodeExampleSecret stands for 32 random bytes kept outside the database.
var nodeExampleSecret = []byte("the node example's root secret, 32+ bytes")

// A host logs in as a node of one network. Config.NodeMember, the
// application's own record of which host is in which network, admits it;
// the node token carries the network and dies with the host's tokens.
func ExampleAuthenticator_LoginNode() {
	members := map[string][]string{"net-1": {"host-1"}}
	auth, err := nmauth.New(nmauth.Config{
		Store:   nmauth.NewMemoryStore(),
		Secrets: [][]byte{nodeExampleSecret},
		NodeMember: func(ctx context.Context, network, hostID string) (bool, error) {
			for _, id := range members[network] {
				if id == hostID {
					return true, nil
				}
			}
			return false, nil
		},
	})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	if err := auth.Admin().CreateHost(ctx, "host-1", "", "host-1 password"); err != nil {
		panic(err)
	}

	login, err := auth.LoginNode(ctx, "net-1", "host-1", "", "host-1 password")
	if err != nil {
		panic(err)
	}
	p, err := auth.CheckBearer(ctx, login.AuthToken)
	fmt.Println(p.Kind, p.Name, p.Network, err)

	_, err = auth.LoginNode(ctx, "net-2", "host-1", "", "host-1 password")
	fmt.Println("net-2:", err)

	if err := auth.Admin().RevokeHostTokens(ctx, "host-1"); err != nil {
		panic(err)
	}
	_, err = auth.CheckBearer(ctx, login.AuthToken)
	fmt.Println("after revoking the host's tokens:", err)
	// Output:
	// node host-1 net-1 <nil>
	// net-2: nmauth: forbidden
	// after revoking the host's tokens: nmauth: unauthenticated
}

// An application that checks its nodes itself (here by a key of its own,
// not shown) mints their tokens with IssueNodeToken; the bearer check and
// the middleware then accept them as any other token.
func ExampleAuthenticator_IssueNodeToken() {
	auth, err := nmauth.New(nmauth.Config{
		Store:   nmauth.NewMemoryStore(),
		Secrets: [][]byte{nodeExampleSecret},
	})
	if err != nil {
		panic(err)
	}
	tok, err := auth.IssueNodeToken(context.Background(), "net-1", "node-7")
	if err != nil {
		panic(err)
	}
	p, err := auth.CheckBearer(context.Background(), tok)
	fmt.Println(p.Kind, p.Name, p.Network, err)

	_, err = auth.IssueNodeToken(context.Background(), "net 1", "node-7")
	fmt.Println(err)
	// Output:
	// node node-7 net-1 <nil>
	// nmauth: invalid network
}
