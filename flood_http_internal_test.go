package nmauth

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nmauth/nmauth/internal/wire"
)

// TestFloodFromManyGroupsLetsNewDeviceIn floods the user logins of a
// real HTTP server on loopback, behind it as behind a trusted proxy, with
// made-up names from 100 IPv4 /24s (and from 120 IPv6 /56s of one /48),
// one request in flight each, as issue 38 found them to hold the whole
// hashing queue; meanwhile alice logs in, each time from an address she
// never used (a new device, or one that roams), so that none of her
// logins is from a known address.
// The hash is a stand-in that holds its slot 10 ms without using the
// CPU, so that the flood fills the queue as a real one would. At least
// 18 of alice's 20 right logins must answer 200: a made-up name waits
// behind an account that exists, and a full queue pushes one of them out
// for her.
func TestFloodFromManyGroupsLetsNewDeviceIn(t *testing.T) {
	cases := []struct {
		name    string
		groups  int
		flooder func(i int) string
		device  func(i int) string
	}{
		{"100 IPv4 /24s", 100, func(i int) string { return fmt.Sprintf("198.18.%d.%d", i, 1+i%250) },
			func(i int) string { return fmt.Sprintf("203.0.113.%d", 1+i) }},
		{"120 IPv6 /56s of one /48", 120, func(i int) string { return fmt.Sprintf("2001:db8:77:%02x00::1", i) },
			func(i int) string { return fmt.Sprintf("2001:db8:99:%x::1", i) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := quickAuth(t, NewMemoryStore(), &fakeClock{now: time.Now()}, func(c *Config) {
				c.PasswordHashConcurrency = 2
				c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}
				c.Now = time.Now
				c.ClientRate = -1 // one request in flight per group is the flood's only bound
			})
			a.hasher.ArgonKey = func(password, salt []byte, _, _ uint32, _ uint8, keyLen uint32) []byte {
				time.Sleep(10 * time.Millisecond)
				sum := sha256.Sum256(append(append([]byte{}, salt...), password...))
				return sum[:keyLen]
			}
			if err := a.Admin().CreateUser(t.Context(), "alice", "right password 1"); err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(a.Handler())
			defer srv.Close()
			client := srv.Client()
			client.Transport.(*http.Transport).MaxIdleConnsPerHost = tc.groups + 4
			login := func(from, name, password string) int {
				b, _ := json.Marshal(wire.UserLoginBody{Username: name, Password: password})
				req, _ := http.NewRequest(http.MethodPost, srv.URL+"/api/users/adm/authenticate", bytes.NewReader(b))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("X-Forwarded-For", from)
				resp, err := client.Do(req)
				if err != nil {
					t.Error(err)
					return 0
				}
				resp.Body.Close()
				if s := resp.StatusCode; s == http.StatusServiceUnavailable && resp.Header.Get("Retry-After") == "" {
					t.Error("503 without Retry-After")
				}
				return resp.StatusCode
			}

			stop := make(chan struct{})
			var flooders sync.WaitGroup
			var floodAnswers [600]atomic.Int64
			for i := range tc.groups {
				flooders.Add(1)
				go func() {
					defer flooders.Done()
					for n := 0; ; n++ {
						select {
						case <-stop:
							return
						default:
						}
						s := login(tc.flooder(i), fmt.Sprintf("made-up-%d-%d", i, n), "wrong password")
						floodAnswers[s%600].Add(1)
					}
				}()
			}
			for floodAnswers[http.StatusServiceUnavailable].Load() < 50 {
				time.Sleep(10 * time.Millisecond) // until the queue is full
			}
			const logins = 20
			var statuses []int
			ok := 0
			for i := range logins {
				s := login(tc.device(i), "alice", "right password 1")
				statuses = append(statuses, s)
				if s == http.StatusOK {
					ok++
				}
				time.Sleep(20 * time.Millisecond)
			}
			close(stop)
			flooders.Wait()
			t.Logf("flood answers: 401×%d 503×%d; alice's statuses %v",
				floodAnswers[401].Load(), floodAnswers[503].Load(), statuses)
			if ok < logins*9/10 {
				t.Errorf("%d of alice's %d right logins from a new device answered 200 under the flood; want at least 90%%", ok, logins)
			}
		})
	}
}
