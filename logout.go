package nmauth

import (
	"context"
	"slices"

	"github.com/nmauth/nmauth/internal/state"
)

// maxLoggedOut bounds the logged-out tokens a user keeps: past it, a
// logout moves the user's generation instead, which ends every session
// of the user (and its access tokens) at once.
const maxLoggedOut = 256

// Logout revokes the token p was authenticated with, on every replica:
// a user token until it would have expired anyway, kept in the user's
// record (so memory and the record hold only the live revocations), and
// an access token by deleting it. This replica refuses the token at once,
// the others once their status cache reads the Store again
// ([Config.StatusCacheTTL]). Other kinds of principal get [ErrForbidden]:
// the master key, and host and node tokens, which their holders renew
// rather than end.
//
// A user with more than 256 tokens logged out and not yet expired is
// logged out everywhere instead: its generation moves, which revokes all
// its tokens, access tokens included.
func (a *Authenticator) Logout(ctx context.Context, p Principal) error {
	switch p.Kind {
	case KindAccessToken:
		return a.DeleteAccessToken(ctx, p, p.TokenID)
	case KindUser:
	default:
		return ErrForbidden
	}
	now := a.now()
	err := a.store.UpdateUser(ctx, p.Name, func(u *User) error {
		live := slices.DeleteFunc(u.State.v.LoggedOut, func(t state.LoggedOut) bool { return !now.Before(t.Until) })
		if slices.ContainsFunc(live, func(t state.LoggedOut) bool { return t.ID == p.TokenID }) {
			u.State.v.LoggedOut = live
			return nil
		}
		if len(live) >= maxLoggedOut {
			u.State.v.LoggedOut = nil
			u.State.v.Generation++
			return nil
		}
		u.State.v.LoggedOut = append(live, state.LoggedOut{ID: p.TokenID, Until: p.ExpiresAt})
		return nil
	})
	if err != nil {
		return err
	}
	a.forget(KindUser, p.Name)
	a.emit(ctx, Event{Type: EventLoggedOut, Kind: KindUser, Name: p.Name})
	return nil
}

// loggedOutIDs lists the ids of logged-out tokens, nil for none.
func loggedOutIDs(ts []state.LoggedOut) []string {
	if len(ts) == 0 {
		return nil
	}
	ids := make([]string, len(ts))
	for i, t := range ts {
		ids[i] = t.ID
	}
	return ids
}
