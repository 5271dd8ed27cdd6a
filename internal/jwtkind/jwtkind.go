// Package jwtkind holds the kinds of JWT nmauth issues (user, pre-auth,
// host and node tokens), the claims they carry, how a token is written,
// and how a token is verified and recognised as one kind. Each kind has
// its own audience and its own signing subkey, so a token of one kind can
// never verify as another (RFC 8725 §3.12). The package knows nothing of
// the Authenticator: the caller holds the keys and decides what a
// verified token grants.
package jwtkind

import (
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"
	"unsafe"

	"github.com/golang-jwt/jwt/v5"

	"github.com/nmauth/nmauth/internal/jwtenc"
)

// Kind names a kind of token.
type Kind uint8

// The kinds, in the order of their subkeys.
const (
	User Kind = iota
	PreAuth
	Host
	Node
	// Count is the number of kinds.
	Count
)

// Audience is each kind's aud claim.
var Audience = [Count]string{
	User:    "nmauth:user",
	PreAuth: "nmauth:pre-auth",
	Host:    "nmauth:host",
	Node:    "nmauth:node",
}

// audienceJSON is each kind's aud claim as a token carries it, encoded
// once.
var audienceJSON [Count][]byte

func init() {
	for k, aud := range Audience {
		audienceJSON[k], _ = jwt.ClaimStrings{aud}.MarshalJSON()
	}
}

// Claims is the payload of every token of these kinds.
type Claims struct {
	jwt.RegisteredClaims
	// IssuedAt shadows the embedded iat to keep nanoseconds, so that a
	// revocation at an instant is exact.
	IssuedAt IssuedAt `json:"iat"`
	// Network is the network of a node token.
	Network string `json:"net,omitempty"`
	// TOTP marks a user token minted by a login that passed a second
	// factor.
	TOTP bool `json:"totp,omitempty"`
	// Generation is the account's revocation counter when the token was
	// minted; user, pre-auth and host tokens must carry it. Absent from
	// node tokens an application mints itself.
	Generation Generation `json:"gen,omitzero"`
}

// GetIssuedAt implements jwt.Claims with the precise iat.
func (c *Claims) GetIssuedAt() (*jwt.NumericDate, error) {
	return jwt.NewNumericDate(c.IssuedAt.Time), nil
}

// Generation is the gen claim, which a token may lack. It is a value
// rather than a pointer, so that parsing a token allocates nothing for it
// and a cached principal holds no pointer for it.
type Generation struct {
	Value uint64
	// Present reports that the token carries the claim.
	Present bool
}

// IsZero reports an absent claim, which omitzero leaves out.
func (g Generation) IsZero() bool { return !g.Present }

// MarshalJSON writes the claim's value.
func (g Generation) MarshalJSON() ([]byte, error) {
	return strconv.AppendUint(nil, g.Value, 10), nil
}

// UnmarshalJSON reads a non-negative integer; null, as for a pointer,
// leaves the claim absent.
func (g *Generation) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*g = Generation{}
		return nil
	}
	n, err := strconv.ParseUint(string(b), 10, 64)
	if err != nil {
		return errors.New("nmauth: malformed gen")
	}
	*g = Generation{Value: n, Present: true}
	return nil
}

// IssuedAt is a NumericDate with nanoseconds, written as a decimal
// fraction as RFC 7519 §2 allows: "1772366460.123456789".
type IssuedAt struct{ time.Time }

// MarshalJSON writes the time with its nanoseconds.
func (t IssuedAt) MarshalJSON() ([]byte, error) { return jwtenc.AppendTime(nil, t.Time), nil }

// UnmarshalJSON reads a NumericDate with at most nine decimals.
func (t *IssuedAt) UnmarshalJSON(b []byte) error {
	iat, err := jwtenc.ParseTime(b)
	if err != nil {
		return err
	}
	t.Time = iat
	return nil
}

// AppendClaims appends c, a token of kind k, as JSON: the bytes
// encoding/json writes for it (a test holds the two equal), with the aud
// claim k's. It is written out because minting is on the path of every
// login (see internal/jwtenc).
func AppendClaims(b []byte, c *Claims, k Kind) ([]byte, error) {
	o := jwtenc.Open(b)
	if c.Issuer != "" {
		o = o.String("iss", c.Issuer)
	}
	if c.Subject != "" {
		o = o.String("sub", c.Subject)
	}
	if len(c.Audience) > 0 {
		o = o.Raw("aud", audienceJSON[k])
	}
	var err error
	if o, err = o.Date("exp", c.ExpiresAt); err != nil {
		return nil, err
	}
	if o, err = o.Date("nbf", c.NotBefore); err != nil {
		return nil, err
	}
	if c.ID != "" {
		o = o.String("jti", c.ID)
	}
	o = o.Time("iat", c.IssuedAt.Time)
	if c.Network != "" {
		o = o.String("net", c.Network)
	}
	if c.TOTP {
		o = o.Raw("totp", []byte("true"))
	}
	if c.Generation.Present {
		o = o.Uint("gen", c.Generation.Value)
	}
	return o.Close(), nil
}

// NewID returns a fresh token id (jti) of 16 bytes read from rand.
func NewID(rand io.Reader) (string, error) {
	id := make([]byte, 16)
	if _, err := io.ReadFull(rand, id); err != nil {
		return "", fmt.Errorf("nmauth: token id: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(id), nil
}

// Sign returns the compact JWS of c, a token of kind k, that golang-jwt's
// SignedString makes, with header already encoded (once per key rather
// than marshalled from a map per token) and sign the HS256 MAC of the
// signing input, all written into one buffer.
func Sign(header string, c *Claims, k Kind, sign func(signing []byte) [sha256.Size]byte) (string, error) {
	payload, err := AppendClaims(make([]byte, 0, 256), c, k)
	if err != nil {
		return "", fmt.Errorf("nmauth: sign token: %w", err)
	}
	enc := base64.RawURLEncoding
	n := len(header) + 1 + enc.EncodedLen(len(payload))
	tok := make([]byte, n+1+enc.EncodedLen(sha256.Size))
	copy(tok, header)
	tok[len(header)] = '.'
	enc.Encode(tok[len(header)+1:n], payload)
	sig := sign(tok[:n])
	tok[n] = '.'
	enc.Encode(tok[n+1:], sig[:])
	// tok is not written again: the string shares its bytes.
	return unsafe.String(unsafe.SliceData(tok), len(tok)), nil
}

// MaxClockSkew is how far ahead of this replica's clock a token's iat may
// be, the drift tolerated between replicas. A token from further ahead
// would live past its kind's lifetime counted from now; revocation does
// not depend on it, since the generation decides that.
const MaxClockSkew = 5 * time.Second

// errKind is returned by the key function for a token whose kind is not
// accepted where it was presented.
var errKind = errors.New("nmauth: token kind not accepted here")

// Verifier checks tokens of one set of kinds. The kinds it accepts are
// fixed when it is built, so no call can widen them.
type Verifier struct {
	parser  *jwt.Parser
	keyFunc jwt.Keyfunc
	now     func() time.Time
	ttl     [Count]time.Duration
	// refused is the error of a token that does not verify.
	refused error
}

// NewVerifier returns the verifier of tokens of the kinds accept, from
// issuer, that live at most their kind's ttl by the clock now. keys
// returns the signing subkeys, by kind, of the key a token names by its
// kid, nil for a key it does not hold. A token that does not verify
// fails with refused, which wraps the parser's error if there is one.
func NewVerifier(issuer string, now func() time.Time, ttl [Count]time.Duration, refused error,
	keys func(kid string) *[Count][]byte, accept ...Kind) *Verifier {
	auds := make([]string, len(accept))
	for i, k := range accept {
		auds[i] = Audience[k]
	}
	v := &Verifier{
		parser: jwt.NewParser(
			jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
			jwt.WithExpirationRequired(),
			jwt.WithIssuer(issuer),
			jwt.WithAudience(auds...),
			jwt.WithTimeFunc(now),
			jwt.WithStrictDecoding(),
		),
		now:     now,
		ttl:     ttl,
		refused: refused,
	}
	v.keyFunc = func(t *jwt.Token) (any, error) {
		kid, _ := t.Header["kid"].(string)
		key := keys(kid)
		if key == nil {
			return nil, errors.New("nmauth: unknown key id")
		}
		kind, ok := Of(t.Claims.(*Claims))
		if !ok || !accepts(accept, kind) {
			return nil, errKind
		}
		return key[kind], nil
	}
	return v
}

// Verify checks a token's signature, algorithm, issuer, audience and
// lifetime, and returns its claims and kind. A token is also refused if it
// claims to be from the future or to live longer than its kind does: only
// a holder of the root secret or a replica with a wrong clock makes those.
func (v *Verifier) Verify(token string) (*Claims, Kind, error) {
	c := &Claims{}
	if _, err := v.parser.ParseWithClaims(token, c, v.keyFunc); err != nil {
		return nil, 0, fmt.Errorf("%w: %w", v.refused, err)
	}
	kind, ok := Of(c)
	if !ok || c.Subject == "" || c.ID == "" || c.IssuedAt.IsZero() {
		return nil, 0, v.refused
	}
	if kind == Node && c.Network == "" {
		return nil, 0, v.refused
	}
	if kind != Node && !c.Generation.Present {
		return nil, 0, v.refused
	}
	if c.IssuedAt.After(v.now().Add(MaxClockSkew)) || c.ExpiresAt.Sub(c.IssuedAt.Time) > v.ttl[kind] {
		return nil, 0, v.refused
	}
	return c, kind, nil
}

// Of reads a token's kind from its single audience.
func Of(c *Claims) (Kind, bool) {
	if len(c.Audience) != 1 {
		return 0, false
	}
	for k, aud := range Audience {
		if c.Audience[0] == aud {
			return Kind(k), true
		}
	}
	return 0, false
}

func accepts(kinds []Kind, k Kind) bool {
	for _, x := range kinds {
		if x == k {
			return true
		}
	}
	return false
}
