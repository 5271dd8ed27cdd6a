package nmauth

import (
	"github.com/nmauth/nmauth/internal/clientaddr"
	"github.com/nmauth/nmauth/internal/state"
)

// StateOf gives the tests of package nmauth_test the fields of s, to read
// and to set.
func StateOf(s *State) *state.User { return &s.v }

// ClientAddrOf is the client address a context names, as events and
// attempt counting read it.
var ClientAddrOf = clientaddr.FromContext
