package nmauth_test

import (
	"context"
	"crypto/rand"
	"errors"
	"strings"
	"testing"

	"github.com/nmauth/nmauth"
)

// TestPasswordRefusalSaysWhy checks that a refused password says what is
// wrong with it in words a user understands, never the password.
func TestPasswordRefusalSaysWhy(t *testing.T) {
	secret := make([]byte, 32)
	rand.Read(secret)
	auth, err := nmauth.New(nmauth.Config{Store: nmauth.NewMemoryStore(), Secrets: [][]byte{secret}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, password, says string }{
		{"empty", "", "empty; a password is required"},
		{"a control character", "correct\x07horse battery", "a character no password may hold, such as a control character"},
		{"invalid UTF-8", "correct horse \xff", "not valid UTF-8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := auth.Admin().CreateUser(context.Background(), "alice", tc.password)
			if !errors.Is(err, nmauth.ErrInvalidPassword) || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("CreateUser: %v; want ErrInvalidPassword saying %q", err, tc.says)
			}
			if tc.password != "" && strings.Contains(err.Error(), tc.password) {
				t.Errorf("the error shows the password: %v", err)
			}
		})
	}
}
