package tokencache

import "encoding/binary"

// base64URL is the value of each character of unpadded base64url, 0xff
// for a character outside it.
var base64URL = func() (t [256]byte) {
	for i := range t {
		t[i] = 0xff
	}
	for i, c := range "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_" {
		t[c] = byte(i)
	}
	return t
}()

// DecodeSignature decodes s, the unpadded base64url of 32 bytes, into sig
// as base64.RawURLEncoding does, spare bits ignored, and reports whether
// it is one. It is the bearer check's hit path, so it does in straight
// code what the general decoder does in a loop.
func DecodeSignature(s string, sig *[32]byte) bool {
	if len(s) != 43 {
		return false
	}
	var bad byte
	for i, j := 0, 0; i < 40; i, j = i+4, j+3 {
		a, b, c, d := base64URL[s[i]], base64URL[s[i+1]], base64URL[s[i+2]], base64URL[s[i+3]]
		bad |= a | b | c | d
		n := uint32(a)<<18 | uint32(b)<<12 | uint32(c)<<6 | uint32(d)
		sig[j], sig[j+1], sig[j+2] = byte(n>>16), byte(n>>8), byte(n)
	}
	a, b, c := base64URL[s[40]], base64URL[s[41]], base64URL[s[42]]
	bad |= a | b | c
	n := uint32(a)<<18 | uint32(b)<<12 | uint32(c)<<6
	sig[30], sig[31] = byte(n>>16), byte(n>>8)
	return bad&0x80 == 0
}

// SameSignature compares two signatures in constant time.
func SameSignature(a, b *[32]byte) bool {
	var x uint64
	for i := 0; i < len(a); i += 8 {
		x |= binary.LittleEndian.Uint64(a[i:]) ^ binary.LittleEndian.Uint64(b[i:])
	}
	return x == 0
}
