// Package enroll reads the requests of host enrollment in both wire
// profiles and writes the shapes Netmaker's server gives them: the body of
// a key's creation, a joining host's body, with its secrets taken out,
// Netmaker's enrollment token, and a key as Netmaker lists it. It knows
// nothing of the Authenticator or its Store: each error it returns for a
// client's mistake is a [RequestError] or one of package jsonbody, and its
// caller maps them to a status.
package enroll

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/nmauth/nmauth/internal/jsonbody"
)

// RequestError is a request whose content is wrong in a way the client
// can fix, with its text as the message.
type RequestError string

func (e RequestError) Error() string { return "nmauth: " + string(e) }

// Netmaker's key types, as its server lists them.
const (
	NetmakerKeyTime      = 1
	NetmakerKeyUses      = 2
	NetmakerKeyUnlimited = 3
)

// NetmakerNilUUID is the relay of a key without one, as Netmaker writes
// it.
const NetmakerNilUUID = "00000000-0000-0000-0000-000000000000"

// KeyBody is the body of key creation in the spec profile, and what a
// creation asks for in either profile.
type KeyBody struct {
	Name      string    `json:"name"`
	Tags      []string  `json:"tags"`
	Networks  []string  `json:"networks"`
	Uses      int       `json:"uses"`
	Unlimited bool      `json:"unlimited"`
	ExpiresAt time.Time `json:"expiresAt"`
}

// NetmakerKeyBody is the body of Netmaker's key creation, as nmctl sends
// it. Netmaker names a key by its tags, the first of which is its name.
type NetmakerKeyBody struct {
	Expiration int64    `json:"expiration"`
	Uses       int      `json:"uses_remaining"`
	Networks   []string `json:"networks"`
	Unlimited  bool     `json:"unlimited"`
	Tags       []string `json:"tags"`
}

// Key is what b asks for. A Netmaker key is named by its first tag, and
// one with an expiry and neither uses nor unlimited admits any number of
// joins until then, as Netmaker's does.
func (b NetmakerKeyBody) Key() (KeyBody, error) {
	if len(b.Tags) == 0 {
		return KeyBody{}, RequestError("tags: give the key a name as its first tag")
	}
	k := KeyBody{Name: b.Tags[0], Tags: b.Tags, Networks: b.Networks,
		Uses: b.Uses, Unlimited: b.Unlimited || b.Uses == 0 && b.Expiration > 0}
	if b.Expiration > 0 {
		k.ExpiresAt = time.Unix(b.Expiration, 0)
	}
	return k, nil
}

// ParseKey reads a key's creation from body in the fields of the spec
// profile, or of Netmaker's when netmaker is set (see
// [NetmakerKeyBody.Key]).
func ParseKey(body []byte, netmaker bool) (KeyBody, error) {
	if !netmaker {
		var k KeyBody
		err := jsonbody.Decode(body, &k)
		return k, err
	}
	var b NetmakerKeyBody
	if err := jsonbody.Decode(body, &b); err != nil {
		return KeyBody{}, err
	}
	return b.Key()
}

// NetmakerKey is a key as Netmaker's server writes it. Value is the key's
// id, which DELETE takes; Token, only in the answer of a creation, is what
// netclient join -t takes. Revoked is nmauth's own.
type NetmakerKey struct {
	Expiration    time.Time `json:"expiration"`
	UsesRemaining int       `json:"uses_remaining"`
	Value         string    `json:"value"`
	Networks      []string  `json:"networks"`
	Unlimited     bool      `json:"unlimited"`
	Tags          []string  `json:"tags"`
	Token         string    `json:"token,omitempty"`
	Type          int       `json:"type"`
	Relay         string    `json:"relay"`
	Groups        []string  `json:"groups"`
	Default       bool      `json:"default"`
	AutoEgress    bool      `json:"auto_egress"`
	AutoAssignGW  bool      `json:"auto_assign_gw"`
	Revoked       bool      `json:"revoked,omitempty"`
}

// NetmakerKeyOf is the key k, whose id is id, with used joins made with it
// and revoked if it is, as Netmaker's server lists it: a key of counted
// uses, else of a time, else unlimited, with no nil list, and named by
// its tags, or by its name when it has none.
func NetmakerKeyOf(k KeyBody, id string, used int, revoked bool) NetmakerKey {
	out := NetmakerKey{
		Expiration: k.ExpiresAt, Value: id, Networks: k.Networks, Unlimited: k.Unlimited,
		Tags: k.Tags, Relay: NetmakerNilUUID, Revoked: revoked,
	}
	switch {
	case !k.Unlimited:
		out.Type, out.UsesRemaining = NetmakerKeyUses, max(0, k.Uses-used)
	case !k.ExpiresAt.IsZero():
		out.Type = NetmakerKeyTime
	default:
		out.Type = NetmakerKeyUnlimited
	}
	if out.Networks == nil {
		out.Networks = []string{}
	}
	if out.Tags == nil {
		out.Tags = []string{k.Name}
	}
	return out
}

// SpecJoined is the spec profile's answer of a join.
type SpecJoined struct {
	ID           string   `json:"id"`
	Networks     []string `json:"networks"`
	ServerConfig any      `json:"serverConfig"`
}

// NetmakerJoined is the answer of Netmaker's register route.
type NetmakerJoined struct {
	ServerConfig  any             `json:"server_config"`
	RequestedHost json.RawMessage `json:"requested_host"`
}

// netmakerToken is what a Netmaker enrollment token encodes.
type netmakerToken struct {
	Server string `json:"server"`
	Value  string `json:"value"`
}

// maxTokenLen bounds a Netmaker enrollment token.
const maxTokenLen = 1024

// NetmakerToken is the Netmaker enrollment token of key on server:
// standard base64 of {"server": …, "value": <key>}.
func NetmakerToken(server, key string) string {
	tok, _ := json.Marshal(netmakerToken{Server: server, Value: key})
	return base64.StdEncoding.EncodeToString(tok)
}

// NetmakerTokenKey reads the key out of a Netmaker enrollment token (see
// [NetmakerToken]).
func NetmakerTokenKey(token string) (string, error) {
	if len(token) > maxTokenLen {
		return "", RequestError("malformed enrollment token: too long")
	}
	b, err := base64.StdEncoding.DecodeString(token)
	if err != nil {
		return "", RequestError("malformed enrollment token: not standard base64")
	}
	var t netmakerToken
	if err := json.Unmarshal(b, &t); err != nil || t.Value == "" {
		return "", RequestError(`malformed enrollment token: not the base64 of {"server": …, "value": …}`)
	}
	return t.Value, nil
}

// Join is what a join request gives.
type Join struct {
	Key, ID, MAC, Password string
	// Public is the host's JSON as sent, without its secrets, for the
	// application's hook and Netmaker's answer.
	Public json.RawMessage
}

// secretHostFields are the fields of a joining host's JSON that hold a
// secret: netclient sends its password and, in its whole configuration,
// its WireGuard and traffic private keys. None is kept, passed on or
// answered.
var secretHostFields = []string{"hostpass", "password", "privatekey", "traffickeyprivate", "key"}

// ParseJoin reads a joining host from body, a JSON object: its id, its
// password under passField, its MAC address (base64 of its bytes when
// macBase64, as netclient sends a net.HardwareAddr, else text), and, in
// the spec profile, the key.
func ParseJoin(body []byte, passField string, macBase64 bool) (Join, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil || fields == nil {
		return Join{}, RequestError("the body must be a JSON object: the joining host")
	}
	known := []string{"id", passField, "macaddress"}
	if !macBase64 {
		known = append(known, "key")
	}
	if err := jsonbody.CheckKeys(body, known); err != nil {
		return Join{}, err
	}
	var h Join
	text := func(name string, dst *string) error {
		raw, ok := fields[name]
		if !ok || bytes.Equal(raw, []byte("null")) {
			return nil
		}
		if json.Unmarshal(raw, dst) != nil {
			return RequestError(name + " must be a string")
		}
		return nil
	}
	for _, f := range []struct {
		name string
		dst  *string
	}{{"id", &h.ID}, {passField, &h.Password}, {"macaddress", &h.MAC}} {
		if err := text(f.name, f.dst); err != nil {
			return Join{}, err
		}
	}
	if !macBase64 {
		if err := text("key", &h.Key); err != nil {
			return Join{}, err
		}
		if err := jsonbody.Require("key", h.Key); err != nil {
			return Join{}, err
		}
	}
	if err := jsonbody.Require("id", h.ID, passField, h.Password); err != nil {
		return Join{}, err
	}
	if macBase64 && h.MAC != "" {
		b, err := base64.StdEncoding.DecodeString(h.MAC)
		if err != nil || len(b) != 6 && len(b) != 8 && len(b) != 20 {
			return Join{}, RequestError("macaddress must be the base64 of a MAC address")
		}
		h.MAC = net.HardwareAddr(b).String()
	}
	for k := range fields {
		// In any case: encoding/json matches a key to a field so.
		if slices.ContainsFunc(secretHostFields, func(f string) bool { return strings.EqualFold(f, k) }) {
			delete(fields, k)
		}
	}
	h.Public, _ = json.Marshal(fields)
	return h, nil
}
