package tests_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/nmauth/nmauth"
	"github.com/nmauth/nmauth/sso"
)

// The shares these tests expect are the defaults: a client group (IPv4
// /24) holds at most 100 of the 10,000 pending logins and 8 of a
// replica's 64 headless websockets.
const (
	defaultGroupPending  = 100
	defaultMaxPending    = 10000
	defaultGroupHeadless = 8
	defaultMaxHeadless   = 64
)

// generousLimit gives the world an Authenticator whose per-client limit
// lets one address begin a thousand logins at once, so that a test meets
// the client group's share and not the per-address limit.
func generousLimit(t *testing.T, c *sso.Config) {
	ext := new(nmauth.Extension)
	_, err := nmauth.New(nmauth.Config{Store: nmauth.NewMemoryStore(), Secrets: [][]byte{[]byte("sso-test-root-secret-0123456789abcdef")},
		ClientBurst: 1000, Extensions: []*nmauth.Extension{ext}})
	if err != nil {
		t.Fatal(err)
	}
	c.Extension = ext
}

// beginFrom begins a browser login through h as the client at addr
// ("10.0.0.1:4000") and returns the answer; a refusal must carry
// Retry-After in the envelope.
func beginFrom(t *testing.T, h http.Handler, addr string) int {
	req := httptest.NewRequest(http.MethodGet, "/api/oauth/login", nil)
	req.RemoteAddr = addr
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusFound {
		wantEnvelope(t, "a login begun from "+addr, rec.Result(), rec.Code)
	}
	return rec.Code
}

// TestPendingShare: one address begins 150 browser logins at once (its
// per-address limit allows 1,000): 100 begin, its group's share, and the
// other 50 get 429 with Retry-After in the envelope, as does a neighbour
// in the same /24; an address of another /24 still begins one. On every
// Store, the table holds 101 pending logins then. 110 addresses of 110
// IPv6 /64s in one /56 are one group too; another /56 still begins.
func TestPendingShare(t *testing.T) {
	for name, b := range stores(t) {
		t.Run(name, func(t *testing.T) {
			w := newWorld(t, func(c *sso.Config) { generousLimit(t, c); c.Store = b.store })
			h := w.sso.Handler()
			counts := map[int]int{}
			for range 150 {
				counts[beginFrom(t, h, "10.9.0.1:4000")]++
			}
			if counts[http.StatusFound] != defaultGroupPending || counts[http.StatusTooManyRequests] != 150-defaultGroupPending {
				t.Fatalf("150 logins from one address: %v, want %d × 302 and the rest 429", counts, defaultGroupPending)
			}
			if code := beginFrom(t, h, "10.9.0.2:4000"); code != http.StatusTooManyRequests {
				t.Errorf("a login from a neighbour in the same /24: %d, want 429", code)
			}
			if code := beginFrom(t, h, "10.9.1.1:4000"); code != http.StatusFound {
				t.Errorf("a login from another /24: %d, want 302", code)
			}
			if b.db != nil {
				if n := countStates(t, b.db); n != defaultGroupPending+1 {
					t.Errorf("%d pending logins stored, want %d", n, defaultGroupPending+1)
				}
			}
			// An IPv6 group is a /56: its /64s, which the per-address
			// limit tells apart, share it.
			v6 := map[int]int{}
			for i := range 110 {
				v6[beginFrom(t, h, fmt.Sprintf("[2001:db8:0:1%02x::1]:4000", i))]++
			}
			if v6[http.StatusFound] == 0 || v6[http.StatusFound] > defaultGroupPending || v6[http.StatusTooManyRequests] == 0 {
				t.Errorf("110 logins from 110 /64s of one /56: %v, want at most %d × 302 and the rest 429", v6, defaultGroupPending)
			}
			if code := beginFrom(t, h, "[2001:db8:0:200::1]:4000"); code != http.StatusFound {
				t.Errorf("a login from another /56: %d, want 302", code)
			}
		})
	}
}

// TestPendingFloodCannotLockOut: 510 addresses begin 20 browser logins
// each, all their per-address limit allows, 10,200 in all, more than the
// 10,000 pending logins there is room for; then a user from another
// address logs in through the provider and gets its token. The flood
// comes from 2 /24s, from 510 /24s, and from 3,000 addresses of 3,000
// /24s, enough to take every place (1,000 of them begin 20 each, then
// the others one each, so that more logins begin than there are places:
// the newcomers pushed out the oldest of the largest groups): a group
// past its share gets 429, never 503, and the table never holds more
// than its room. On the SQL stores, which count the live states up to
// the room at each put (a flood into 10,000 takes minutes there), the
// room is 1,000 and each address begins 2, still more than the room, or
// for the many groups, 300 addresses as the 3,000 do.
func TestPendingFloodCannotLockOut(t *testing.T) {
	spreads := map[string]func(i int) string{
		"2 groups":   func(i int) string { return fmt.Sprintf("10.20.%d.%d:4000", i/255, 1+i%255) },
		"510 groups": func(i int) string { return fmt.Sprintf("10.%d.%d.1:4000", 30+i/256, i%256) },
		// Enough groups to take every place (about 2 × room / √share:
		// 2,000 for 10,000), whose oldest logins the newcomers push out.
		"many groups": func(i int) string { return fmt.Sprintf("10.%d.%d.1:4000", 100+i/256, i%256) },
	}
	for spread, addr := range spreads {
		for name, b := range stores(t) {
			t.Run(spread+"/"+name, func(t *testing.T) {
				room, each, senders := defaultMaxPending, 20, 510
				if spread == "many groups" {
					senders = 3000
				}
				if b.db != nil {
					room, each = 1000, 2
					if spread == "many groups" {
						each, senders = 20, 300
					}
				}
				w := newWorld(t, func(c *sso.Config) { c.Store, c.MaxPending = b.store, room })
				w.link("id1", "alice")
				h := w.sso.Handler()
				jobs := make(chan string)
				var mu sync.Mutex
				counts := map[int]int{}
				var workers sync.WaitGroup
				for range 8 {
					workers.Go(func() {
						for a := range jobs {
							code := beginFrom(t, h, a)
							mu.Lock()
							counts[code]++
							mu.Unlock()
						}
					})
				}
				// The many groups fill the table as a flood best can: a
				// third of them as far as their shares go, then the
				// others, which hold none, one each.
				first := senders
				if spread == "many groups" {
					first = senders / 3
				}
				for range each {
					for i := range first {
						jobs <- addr(i)
					}
				}
				for i := first; i < senders; i++ {
					jobs <- addr(i)
				}
				close(jobs)
				workers.Wait()
				if counts[http.StatusFound]+counts[http.StatusTooManyRequests] != first*each+senders-first {
					t.Errorf("the flood's answers %v, want 302 and 429 only", counts)
				}
				if spread == "many groups" && counts[http.StatusFound] <= room {
					t.Errorf("the flood's answers %v: it never filled the %d places", counts, room)
				}
				if b.db != nil {
					if n := countStates(t, b.db); n > room {
						t.Errorf("%d pending logins stored, more than %d", n, room)
					}
				}
				status, v := newBrowser(t).login(w, "alice")
				if status != http.StatusFound || v.Get("authToken") == "" {
					t.Fatalf("a user's login after the flood (%v): %d %v, want its token", counts, status, v)
				}
				t.Logf("flood %v; the user logged in", counts)
			})
		}
	}
}

// dialFrom opens a headless login's websocket at base from the local
// address ip, one of the loopback's 127.0.0.0/8, so that a test speaks
// from many client groups.
func dialFrom(ctx context.Context, base, ip string) (*websocket.Conn, *http.Response, error) {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	client := &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
	return websocket.Dial(ctx, "ws"+strings.TrimPrefix(base, "http")+"/api/oauth/headless", &websocket.DialOptions{HTTPClient: client})
}

// headlessLogin runs a headless login from ip to its token: the first
// message's URL through the provider as alice, the code confirmed. It
// fails the test unless the terminal gets a token of alice's.
func headlessLogin(ctx context.Context, t *testing.T, w *world, ip string) {
	t.Helper()
	conn, resp, err := dialFrom(ctx, w.app.URL, ip)
	if err != nil {
		status := 0
		if resp != nil {
			status = resp.StatusCode
		}
		t.Fatalf("a headless login from %s: %d %v", ip, status, err)
	}
	defer conn.CloseNow()
	_, first, err := conn.Read(ctx)
	m := firstMessage.FindStringSubmatch(string(first))
	if err != nil || m == nil {
		t.Fatalf("first message %q, %v", first, err)
	}
	b := newBrowser(t)
	_, token := b.confirmPage(w, m[1], "alice")
	if status, body := b.answer(w.app.URL, token, "confirm"); status != http.StatusOK {
		t.Fatalf("the confirmation: %d %s", status, body)
	}
	_, msg, err := conn.Read(ctx)
	tok, ok := strings.CutPrefix(string(msg), "JWT: ")
	if err != nil || !ok {
		t.Fatalf("the terminal got %q, %v; want its token", msg, err)
	}
	if p, err := w.auth.CheckBearer(ctx, tok); err != nil || p.Name != "alice" {
		t.Fatalf("the headless token: %+v, %v", p, err)
	}
}

// TestHeadlessShare: one address opens headless logins and holds them:
// 8 wait, its group's share of the 64, and the 9th gets 429 with
// Retry-After in the envelope; a terminal in another /24 still logs in.
func TestHeadlessShare(t *testing.T) {
	w := newWorld(t, nil)
	w.link("id1", "alice")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i := range defaultGroupHeadless {
		conn, _, err := dialFrom(ctx, w.app.URL, "127.0.0.1")
		if err != nil {
			t.Fatalf("headless login %d from one address: %v", i+1, err)
		}
		defer conn.CloseNow()
		if _, _, err := conn.Read(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if _, resp, err := dialFrom(ctx, w.app.URL, "127.0.0.1"); err == nil || resp == nil {
		t.Fatalf("headless login %d from one address: %v, want 429", defaultGroupHeadless+1, err)
	} else {
		wantEnvelope(t, "a headless login past the group's share", resp, http.StatusTooManyRequests)
	}
	headlessLogin(ctx, t, w, "127.0.1.1")
}

// TestHeadlessFloodCannotLockOut: 510 addresses of 510 /24s open a
// headless login each and hold it, more than the 64 a replica keeps
// waiting; then a terminal from another /24 still logs in to its token.
// The oldest waiting logins made room for the newer ones and were told to
// start again: at most 64 are held at the end.
func TestHeadlessFloodCannotLockOut(t *testing.T) {
	w := newWorld(t, nil)
	w.link("id1", "alice")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var conns []*websocket.Conn
	defer func() {
		for _, c := range conns {
			c.CloseNow()
		}
	}()
	refused := 0
	for i := range 510 {
		ip := fmt.Sprintf("127.%d.%d.1", 1+i/256, i%256)
		conn, resp, err := dialFrom(ctx, w.app.URL, ip)
		if err != nil {
			if resp == nil {
				t.Fatalf("headless login from %s: %v", ip, err)
			}
			refused++
			continue
		}
		conns = append(conns, conn)
		if _, _, err := conn.Read(ctx); err != nil {
			t.Fatalf("headless login from %s: %v", ip, err)
		}
	}
	headlessLogin(ctx, t, w, "127.0.0.1")
	// Every pushed-out terminal was told so. (A read that times out
	// closes its socket: so these are counted last.)
	held, told := 0, 0
	for _, c := range conns {
		rctx, rcancel := context.WithTimeout(ctx, 100*time.Millisecond)
		_, msg, err := c.Read(rctx)
		rcancel()
		switch {
		case err == nil && strings.Contains(string(msg), "start again"):
			told++
		case err != nil && rctx.Err() != nil:
			held++
		}
	}
	if held > defaultMaxHeadless || held+told != len(conns) {
		t.Errorf("of %d headless logins, %d held and %d told to start again; want at most %d held and the rest told",
			len(conns), held, told, defaultMaxHeadless)
	}
	t.Logf("510 groups: %d refused, %d held, %d told to start again", refused, held, told)
}
