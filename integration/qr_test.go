package integration

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"image/png"
	"strings"
	"testing"

	"github.com/makiuchi-d/gozxing"
	"github.com/makiuchi-d/gozxing/qrcode"

	"github.com/nmauth/nmauth"
)

// TestQRCodesDecode starts 200 enrollments, each with a fresh random
// secret, with URLs of 128 lengths one after the other, and reads each QR
// code back with a QR reader, as a phone reads it, so that no URL length
// gives a code a reader cannot take.
func TestQRCodesDecode(t *testing.T) {
	ctx := context.Background()
	const masterKey = "qr-master-key-0123456789abcdef-0123456"
	mk, err := nmauth.NewMasterKey(masterKey, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	store := nmauth.NewMemoryStore()
	secret := make([]byte, 32)
	rand.Read(secret)
	// The issuer is in the URL twice, as its label's prefix and as a
	// parameter, so each issuer is two characters longer than the one
	// before; the two users' names take the lengths between.
	auths := make([]*nmauth.Authenticator, 64)
	for i := range auths {
		cfg := nmauth.Config{Store: store, Secrets: [][]byte{secret}, MasterKey: mk, Issuer: "nmauth" + strings.Repeat("i", i)}
		if auths[i], err = nmauth.New(cfg); err != nil {
			t.Fatal(err)
		}
	}
	users := []string{"alice", "alicia"}
	for _, name := range users {
		if err := auths[0].Admin().CreateUser(ctx, name, "correct horse battery"); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 200 {
		n := i % (2 * len(auths))
		a, user := auths[n/2], users[n%2]
		master, err := a.CheckBearer(ctx, masterKey)
		if err != nil {
			t.Fatal(err)
		}
		e, err := a.InitTOTP(ctx, master, user)
		if err != nil {
			t.Fatal(err)
		}
		if got := readQR(t, e.QRCode); got != e.URL {
			t.Fatalf("QR holds %q, want %q", got, e.URL)
		}
	}
}

// readQR reads the QR code of a PNG data: URL.
func readQR(t *testing.T, dataURL string) string {
	t.Helper()
	raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(dataURL, "data:image/png;base64,"))
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	bmp, err := gozxing.NewBinaryBitmapFromImage(img)
	if err != nil {
		t.Fatal(err)
	}
	// The image is generated, upright and unblurred: read it as a pure
	// barcode rather than searching for it as a camera would.
	res, err := qrcode.NewQRCodeReader().Decode(bmp, map[gozxing.DecodeHintType]any{gozxing.DecodeHintType_PURE_BARCODE: true})
	if err != nil {
		t.Fatalf("QR code unreadable: %v", err)
	}
	return res.GetText()
}
