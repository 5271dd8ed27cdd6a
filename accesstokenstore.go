package nmauth

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"time"

	"github.com/nmauth/nmauth/internal/guard"
	"github.com/nmauth/nmauth/internal/memtable"
)

// AccessToken is the stored record of a personal access token. It holds
// no secret in the clear: Digest is the keyed digest of the token's
// secret, as a machine secret's is (see [Admin.CreateHost]), so a
// copy of the database gives no token and lets no one test a guess.
//
// The bearer credential, which [Authenticator.CreateAccessToken] returns
// beside it, begins with "nmauth_at_", so that secret scanners and people
// tell one at a glance. The whole token is
//
//	nmauth_at_<id>_<secret>_<check>
//
// in upper-case base32: an id of 16 characters (80 bits), a secret of 26
// (128 bits, drawn from [Config.Rand]), and a check of 26, the first 128
// bits of the keyed digest of id and secret. The check lets a replica
// refuse a made-up token without reading the Store; only the Store's
// digest, compared in constant time, accepts one.
type AccessToken struct {
	// ID names the token in lists and in revocation; it is the part of
	// the token before its secret, and is no secret itself.
	ID string `json:"id"`
	// Name is the label its creator gave it.
	Name string `json:"name"`
	// UserName is the user the token acts for.
	UserName string `json:"userName"`
	// ReadOnly and Networks are its scope; see [AccessTokenRequest].
	ReadOnly bool     `json:"readOnly"`
	Networks []string `json:"networks,omitempty"`
	// CreatedBy is the username of its creator, "" for the master key.
	CreatedBy string    `json:"createdBy"`
	CreatedAt time.Time `json:"createdAt"`
	ExpiresAt time.Time `json:"expiresAt"`
	// LastUsed is when it was last checked, to the minute at best (see
	// [AccessTokenStore.TouchAccessToken]); zero if never.
	LastUsed time.Time `json:"lastUsed,omitzero"`
	// Broken names the parts of the record the Store could not decode,
	// as [User.Broken] does: set only by ListAccessTokens, which returns
	// a broken token rather than fail the list. GetAccessToken of it
	// returns a [*BrokenRecordError]. Such a token answers 500 until
	// nmauthd check --repair deletes it.
	Broken []string `json:"broken,omitempty"`

	// Digest and Generation are for the Store alone:
	// [Authenticator.ListAccessTokens] and [Authenticator.CreateAccessToken]
	// leave them empty. Generation is the user's revocation generation
	// when the token was made: the token dies when the user's moves.
	Digest     string `json:"-"`
	Generation uint64 `json:"-"`
}

// AccessTokenStore is implemented by a [Store] that keeps access tokens.
// [MemoryStore] and [SQLStore] do. An Authenticator whose Store does not
// implement it issues no access tokens and accepts none.
//
// GetAccessToken of a missing id returns [ErrNotFound]. CreateAccessToken
// of an existing id returns [ErrExists], and [ErrTooManyAccessTokens] when
// the token's user holds max live tokens already, counted in one atomic
// step with the insert, so that creations at once for one user never pass
// the bound together. A token is live when t is made if it carries t's
// Generation (the user's, which moves when the user's tokens are revoked)
// and expires after t.CreatedAt; CreateAccessToken deletes the user's
// other tokens in the same step, so that dead tokens neither count nor
// stay. ListAccessTokens returns a user's tokens oldest first. DeleteAccessToken of a missing id
// is a no-op, and DeleteUserAccessTokens deletes every token of a user.
// TouchAccessToken sets a token's LastUsed to used if that is later, and
// is a no-op for a missing id.
type AccessTokenStore interface {
	CreateAccessToken(ctx context.Context, t AccessToken, max int) error
	GetAccessToken(ctx context.Context, id string) (AccessToken, error)
	ListAccessTokens(ctx context.Context, userName string) ([]AccessToken, error)
	DeleteAccessToken(ctx context.Context, id string) error
	DeleteUserAccessTokens(ctx context.Context, userName string) error
	TouchAccessToken(ctx context.Context, id string, used time.Time) error
}

var _ AccessTokenStore = (*MemoryStore)(nil)

// accessRow is the [memtable.Kind] of a MemoryStore's access tokens.
type accessRow struct{}

func (accessRow) Clone(t AccessToken) AccessToken {
	t.Networks = slices.Clone(t.Networks)
	t.Broken = slices.Clone(t.Broken)
	return t
}

func (accessRow) Key(t *AccessToken) *string { return &t.ID }

// CreateAccessToken implements [AccessTokenStore].
func (s *MemoryStore) CreateAccessToken(ctx context.Context, t AccessToken, max int) error {
	return memtable.Do(ctx, &s.mu, func() error {
		if _, ok := s.access.Get(t.ID); ok {
			return ErrExists
		}
		held := 0
		for id, other := range s.access.All() {
			switch {
			case other.UserName != t.UserName:
			case !liveAccessToken(other, t):
				s.access.Delete(id)
			default:
				held++
			}
		}
		if held >= max {
			return ErrTooManyAccessTokens
		}
		s.access.Put(t)
		return nil
	})
}

// liveAccessToken reports whether other, a token of t's user, is still
// live when t is made: not revoked since (its generation is t's) and not
// expired.
func liveAccessToken(other, t AccessToken) bool {
	return other.Generation == t.Generation && other.ExpiresAt.After(t.CreatedAt)
}

// GetAccessToken implements [AccessTokenStore].
func (s *MemoryStore) GetAccessToken(ctx context.Context, id string) (AccessToken, error) {
	return memtable.Lock(ctx, &s.mu, func() (AccessToken, error) { return s.access.Find(id, ErrNotFound) })
}

// ListAccessTokens implements [AccessTokenStore].
func (s *MemoryStore) ListAccessTokens(ctx context.Context, userName string) ([]AccessToken, error) {
	return memtable.Lock(ctx, &s.mu, func() ([]AccessToken, error) {
		var out []AccessToken
		for _, t := range s.access.All() {
			if t.UserName == userName {
				out = append(out, accessRow{}.Clone(t))
			}
		}
		slices.SortFunc(out, func(a, b AccessToken) int {
			return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID))
		})
		return out, nil
	})
}

// DeleteAccessToken implements [AccessTokenStore].
func (s *MemoryStore) DeleteAccessToken(ctx context.Context, id string) error {
	return memtable.Do(ctx, &s.mu, func() error { return s.access.Remove(id) })
}

// DeleteUserAccessTokens implements [AccessTokenStore].
func (s *MemoryStore) DeleteUserAccessTokens(ctx context.Context, userName string) error {
	return memtable.Do(ctx, &s.mu, func() error {
		for id, t := range s.access.All() {
			if t.UserName == userName {
				s.access.Delete(id)
			}
		}
		return nil
	})
}

// TouchAccessToken implements [AccessTokenStore].
func (s *MemoryStore) TouchAccessToken(ctx context.Context, id string, used time.Time) error {
	return memtable.Do(ctx, &s.mu, func() error {
		if t, ok := s.access.Get(id); ok && used.After(t.LastUsed) {
			t.LastUsed = used
			s.access.Put(t)
		}
		return nil
	})
}

// guardedTokens is the [AccessTokenStore] of a guarded Store, under the
// same deadline and fault answers as its other calls.
type guardedTokens struct {
	g     *guard.Guard
	inner AccessTokenStore
}

// accessTokens returns the guarded access-token store, or nil when the
// Store keeps no access tokens.
func (s *guardedStore) accessTokens() *guardedTokens {
	inner, ok := s.Store.(AccessTokenStore)
	if !ok {
		return nil
	}
	return &guardedTokens{g: s.g, inner: inner}
}

func (t *guardedTokens) CreateAccessToken(ctx context.Context, at AccessToken, max int) error {
	return t.g.Call(ctx, "create access token", func(ctx context.Context) error { return t.inner.CreateAccessToken(ctx, at, max) },
		func(err error) bool { return contractError(err) || errors.Is(err, ErrTooManyAccessTokens) })
}

func (t *guardedTokens) GetAccessToken(ctx context.Context, id string) (AccessToken, error) {
	return guard.Result(t.g, ctx, "get access token", func(ctx context.Context) (AccessToken, error) { return t.inner.GetAccessToken(ctx, id) }, contractError)
}

func (t *guardedTokens) ListAccessTokens(ctx context.Context, userName string) ([]AccessToken, error) {
	return guard.List(t.g, ctx, "list access tokens", func(ctx context.Context) ([]AccessToken, error) { return t.inner.ListAccessTokens(ctx, userName) }, contractError)
}

func (t *guardedTokens) DeleteAccessToken(ctx context.Context, id string) error {
	return t.g.Call(ctx, "delete access token", func(ctx context.Context) error { return t.inner.DeleteAccessToken(ctx, id) }, contractError)
}

func (t *guardedTokens) DeleteUserAccessTokens(ctx context.Context, userName string) error {
	return t.g.Call(ctx, "delete access tokens", func(ctx context.Context) error { return t.inner.DeleteUserAccessTokens(ctx, userName) }, contractError)
}

func (t *guardedTokens) TouchAccessToken(ctx context.Context, id string, used time.Time) error {
	return t.g.Call(ctx, "touch access token", func(ctx context.Context) error { return t.inner.TouchAccessToken(ctx, id, used) }, contractError)
}
