package hashfmt

import (
	"errors"
	"strings"
	"testing"
)

// FuzzImportedHash: the parser of imported hashes never panics, accepts
// only the formats it names, bounds what it accepts, and a hash it
// accepts (when cheap enough to run here) verifies without panicking.
func FuzzImportedHash(f *testing.F) {
	for _, s := range []string{
		"$argon2i$v=19$m=1024,t=2,p=1$c2FsdHlzYWx0eXNhbHQxNg$p5WDkoCgIKhhb17B0gQ2jEMOHEzo8D0i0Y68K7yj4e4",
		"$scrypt$ln=10,r=8,p=1$c2FsdHlzYWx0eXNhbHQxNg$IyMRJYaO05epMSRuv1nhK1ZGIu5JPnBqLuk3FAIgmYY",
		"$pbkdf2-sha256$i=1000,l=32$c2FsdHlzYWx0eXNhbHQxNg$VyskA9i4O8a/sUhIxEsOQk8J/MOSjwmU99UUa5Jc94A",
		"pbkdf2_sha256$870000$DjangoSalt123$T8WDGiTu6GVjaA3dS/EZ6d15GAEUmAeua5KMN+HVFf0=",
		"$argon2i$v=19$m=64,t=1,p=1$c2FsdHlzYWx0eXNhbHQxNg$p5WDkoCgIKhhb17B0gQ2jEMOHEzo8D0i0Y68K7yj4e4",
		"$scrypt$ln=4,r=1,p=1$c2FsdHlzYWx0eXNhbHQxNg$IyMRJYaO05epMSRuv1nhK1ZGIu5JPnBqLuk3FAIgmYY",
		"$pbkdf2-sha256$i=50,l=32$c2FsdHlzYWx0eXNhbHQxNg$VyskA9i4O8a/sUhIxEsOQk8J/MOSjwmU99UUa5Jc94A",
		"$scrypt$ln=24,r=8,p=1$c2FsdA$c2FsdA", "$pbkdf2-sha256$i=0,l=0$$", "pbkdf2_sha256$$$", "$argon2i$v=16$m=8,t=1,p=1$$",
		"", "$", "$scrypt$", "{SSHA}abc",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, encoded string) {
		h, err := parseImported(Identify(encoded), encoded)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			return
		}
		known := false
		for _, p := range []string{argon2iPrefix, scryptPrefix, pbkdf2Prefix, djangoPBKDF2Prefix} {
			known = known || strings.HasPrefix(encoded, p)
		}
		if !known {
			t.Fatalf("unknown format %q accepted", encoded)
		}
		_ = h.weakness()
		if _, err := Importable(encoded); err != nil {
			t.Fatalf("parsed but not importable: %v", err)
		}
		cheap := false
		switch v := h.(type) {
		case argon2iHash:
			cheap = v.Memory <= 64 && v.Time <= 1
		case scryptHash:
			cheap = v.logN <= 4 && v.r <= 2 && v.p <= 1
		case pbkdf2Hash:
			cheap = v.rounds <= 100
		}
		if cheap && h.matches("not the password") && h.matches("another wrong one") {
			t.Fatalf("%q matches two passwords", encoded)
		}
	})
}
