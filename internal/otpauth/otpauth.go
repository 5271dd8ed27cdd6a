// Package otpauth is TOTP as authenticator apps know it: the codes of
// RFC 6238 over the HOTP of RFC 4226, with HMAC-SHA1, 6 digits and
// 30-second steps; the otpauth URL that carries a secret to an app, and
// read back at enrollment; and that URL drawn as a QR code.
//
// It checks codes and keeps no state: the caller stores the last step a
// code was accepted at and hands it to [Match], which refuses a replay.
package otpauth

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha1"
	"crypto/subtle"
	"encoding/base32"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"io"
	"strings"
	"time"

	"github.com/boombuler/barcode/qr"
	"github.com/pquerna/otp"
	"github.com/pquerna/otp/totp"
)

// TOTP parameters: every enrollment uses these, as authenticator apps
// expect.
const (
	Period     = 30
	Digits     = 6
	SecretSize = 20 // 160 bits
	qrSize     = 256
)

// NewURL makes a new secret from rnd and returns it as the otpauth URL of
// account at issuer.
func NewURL(rnd io.Reader, issuer, account string) (string, error) {
	secret := make([]byte, SecretSize)
	if _, err := io.ReadFull(rnd, secret); err != nil {
		return "", fmt.Errorf("nmauth: totp secret: %w", err)
	}
	key, err := totp.Generate(totp.GenerateOpts{
		Issuer:      issuer,
		AccountName: account,
		Period:      Period,
		Secret:      secret,
		Digits:      otp.DigitsSix,
		Algorithm:   otp.AlgorithmSHA1,
	})
	if err != nil {
		return "", fmt.Errorf("nmauth: totp key: %w", err)
	}
	return key.URL(), nil
}

// Secret reads the secret back from an otpauth URL and checks that it is
// the URL [NewURL] makes for account at issuer; ok is false if not.
func Secret(rawURL, account, issuer string) (secret []byte, ok bool) {
	key, err := otp.NewKeyFromURL(rawURL)
	if err != nil || key.Type() != "totp" || key.AccountName() != account || key.Issuer() != issuer ||
		key.Period() != Period || key.Digits() != otp.DigitsSix || key.Algorithm() != otp.AlgorithmSHA1 {
		return nil, false
	}
	secret, err = base32.StdEncoding.WithPadding(base32.NoPadding).DecodeString(strings.ToUpper(key.Secret()))
	if err != nil || len(secret) != SecretSize {
		return nil, false
	}
	return secret, true
}

// QRDataURL draws the URL as a QR code with whole-pixel modules and the
// four-module quiet zone the QR standard asks for, so that every camera
// reads it, and returns it as a PNG data: URL.
func QRDataURL(url string) (string, error) {
	code, err := qr.Encode(url, qr.M, qr.Auto)
	if err != nil {
		return "", fmt.Errorf("nmauth: qr code: %w", err)
	}
	const quiet = 4
	n := code.Bounds().Dx()
	scale := max(1, qrSize/(n+2*quiet))
	side := (n + 2*quiet) * scale
	img := image.NewPaletted(image.Rect(0, 0, side, side), color.Palette{color.White, color.Black})
	for y := range n {
		for x := range n {
			if code.At(x, y) == color.Black {
				draw.Draw(img, image.Rect((x+quiet)*scale, (y+quiet)*scale, (x+quiet+1)*scale, (y+quiet+1)*scale), image.Black, image.Point{}, draw.Src)
			}
		}
	}
	var buf bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestSpeed}
	if err := enc.Encode(&buf, img); err != nil {
		return "", fmt.Errorf("nmauth: qr code: %w", err)
	}
	return "data:image/png;base64," + base64.StdEncoding.EncodeToString(buf.Bytes()), nil
}

// hotp computes the RFC 4226 dynamic truncation of HMAC-SHA1(secret, counter).
func hotp(secret []byte, counter uint64) uint32 {
	var msg [8]byte
	binary.BigEndian.PutUint64(msg[:], counter)
	m := hmac.New(sha1.New, secret)
	m.Write(msg[:])
	sum := m.Sum(nil)
	off := sum[len(sum)-1] & 0x0f
	return binary.BigEndian.Uint32(sum[off:]) & 0x7fffffff
}

// stepCode returns the code for a 30-second step as a fixed-width string.
func stepCode(secret []byte, step int64, digits int) string {
	mod := uint32(1)
	for range digits {
		mod *= 10
	}
	return fmt.Sprintf("%0*d", digits, hotp(secret, uint64(step))%mod)
}

// Match checks code against steps T-1, T and T+1, comparing every one
// in constant time. It returns the latest matching step after lastStep, or
// -1; replayed reports a match at a step already used.
func Match(secret []byte, code string, now time.Time, lastStep int64) (step int64, replayed bool) {
	t := now.Unix() / Period
	step = -1
	for s := t - 1; s <= t+1; s++ {
		if subtle.ConstantTimeCompare([]byte(stepCode(secret, s, Digits)), []byte(code)) == 1 {
			if s > lastStep {
				step = s
			} else {
				replayed = true
			}
		}
	}
	return step, replayed
}

// WellFormed reports whether code has the shape of a TOTP code: six
// decimal digits.
func WellFormed(code string) bool {
	if len(code) != Digits {
		return false
	}
	for i := 0; i < len(code); i++ {
		if code[i] < '0' || code[i] > '9' {
			return false
		}
	}
	return true
}
