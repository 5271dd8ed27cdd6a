package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pquerna/otp"
	"github.com/pquerna/otp/totp"
)

// totpPeriod is the step of the codes nmauth enrolls.
const totpPeriod = 30

var totpOpts = totp.ValidateOpts{Period: totpPeriod, Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1}

// totpUser is a user with TOTP on that the tool can log in as and compute
// codes for. The users file holds a list of them; it holds passwords and
// TOTP secrets, so it is written readable by its owner only, and is meant
// for test servers.
type totpUser struct {
	Name     string `json:"name"`
	Password string `json:"password"`
	// Secret is the base32 TOTP secret.
	Secret string `json:"secret"`
	// LastStep is the latest 30-second step this tool sent a code for; the
	// server accepts each user's codes only for later steps.
	LastStep int64 `json:"lastStep"`
}

func currentStep() int64 { return time.Now().Unix() / totpPeriod }

// totpNames are the users -setup enrolls: -totp-prefix with -totp-count,
// or the one -totp-user.
func totpNames(o *options) []string {
	if o.totpPrefix != "" && o.totpCount > 0 {
		names := make([]string, o.totpCount)
		for i := range names {
			names[i] = fmt.Sprintf("%s-%04d", o.totpPrefix, i)
		}
		return names
	}
	if o.totpUser != "" {
		return []string{o.totpUser}
	}
	return nil
}

// setupTOTP enrolls every named user over HTTP with the master key:
// init-totp, then complete-totp with a code computed from the secret. The
// users must exist already (nmauthd has no route that creates users: make
// them with `nmauthd user add`). It writes the users file.
func setupTOTP(ctx context.Context, o *options, a *api, log io.Writer) error {
	names := totpNames(o)
	switch {
	case o.masterKey == "":
		return errors.New("-setup needs the master key (-master-key, NMAUTH_LOAD_MASTER_KEY or MASTER_KEY)")
	case len(names) == 0:
		return errors.New("-setup needs -totp-prefix with -totp-count, or -totp-user")
	case o.totpPassword == "":
		return errors.New("-setup needs the users' password (-totp-password or NMAUTH_LOAD_TOTP_PASSWORD)")
	case o.totpFile == "":
		return errors.New("-setup needs -totp-file to write the users to")
	}
	users := make([]totpUser, len(names))
	err := forEach(ctx, len(names), o.bounds.clients, func(i int) error {
		secret, step, err := enroll(ctx, a, o.masterKey, names[i])
		if err != nil {
			var se *statusError
			if errors.As(err, &se) && se.status == http.StatusNotFound {
				return fmt.Errorf("%w (create the user first: nmauthd user add %s)", err, names[i])
			}
			return err
		}
		users[i] = totpUser{Name: names[i], Password: o.totpPassword, Secret: secret, LastStep: step}
		return nil
	})
	if err != nil {
		return err
	}
	if err := saveTOTPUsers(o.totpFile, users); err != nil {
		return err
	}
	fmt.Fprintf(log, "enrolled %d users in TOTP; wrote %s\n", len(users), o.totpFile)
	return nil
}

// enroll turns TOTP on for one user and returns its secret and the step of
// the code that completed the enrollment.
func enroll(ctx context.Context, a *api, master, name string) (string, int64, error) {
	e, err := a.initTOTP(ctx, master, name)
	if err != nil {
		return "", 0, err
	}
	key, err := otp.NewKeyFromURL(e.URL)
	if err != nil {
		return "", 0, fmt.Errorf("init-totp of %s: otpauth URL: %w", name, err)
	}
	step := currentStep()
	code, err := totp.GenerateCodeCustom(key.Secret(), time.Unix(step*totpPeriod, 0), totpOpts)
	if err != nil {
		return "", 0, err
	}
	if err := a.completeTOTP(ctx, master, name, e, code); err != nil {
		return "", 0, err
	}
	return key.Secret(), step, nil
}

func loadTOTPUsers(o *options) ([]totpUser, error) {
	if o.totpFile != "" {
		data, err := os.ReadFile(o.totpFile)
		if err != nil {
			return nil, err
		}
		var users []totpUser
		if err := json.Unmarshal(data, &users); err != nil {
			return nil, fmt.Errorf("%s: %w", o.totpFile, err)
		}
		if len(users) == 0 {
			return nil, fmt.Errorf("%s lists no user", o.totpFile)
		}
		return users, nil
	}
	if o.totpUser == "" || o.totpPassword == "" || o.totpSecret == "" {
		return nil, errors.New("needs -totp-file, or -totp-user with its password and base32 secret (-totp-password, -totp-secret or NMAUTH_LOAD_TOTP_PASSWORD, NMAUTH_LOAD_TOTP_SECRET)")
	}
	return []totpUser{{Name: o.totpUser, Password: o.totpPassword, Secret: o.totpSecret}}, nil
}

// saveTOTPUsers writes the users file readable by its owner only, through
// a temporary file so a crash leaves the old one whole.
func saveTOTPUsers(path string, users []totpUser) error {
	data, err := json.MarshalIndent(users, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".nmauth-load-users-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(data, '\n')); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// pendingVerify is one user's pre-auth token, waiting to be redeemed.
type pendingVerify struct {
	user    *totpUser
	preAuth string
}

// prepareVerify logs every TOTP user in (untimed: that is the login
// scenario's cost) and returns a source that redeems each pre-auth token
// once with a code for a step the user has not used. Each user holds one
// pre-auth token at a time, so the scenario sends at most one verification
// per user.
func prepareVerify(ctx context.Context, o *options, a *api, log io.Writer) (source, func() error, error) {
	users, err := loadTOTPUsers(o)
	if err != nil {
		return nil, nil, err
	}
	if o.bounds.n > 0 && o.bounds.n < len(users) {
		users = users[:o.bounds.n]
	}
	if err := waitForFreshStep(ctx, users, log); err != nil {
		return nil, nil, err
	}
	fmt.Fprintf(log, "verify-totp: logging %d users in for pre-auth tokens (untimed)\n", len(users))
	pending := make(chan pendingVerify, len(users))
	err = forEach(ctx, len(users), o.bounds.clients, func(i int) error {
		out, err := a.login(ctx, users[i].Name, users[i].Password)
		if err != nil {
			return err
		}
		if !out.TOTPRequired || out.PreAuthToken == "" {
			return fmt.Errorf("user %s has TOTP off: enroll it with -setup", users[i].Name)
		}
		pending <- pendingVerify{user: &users[i], preAuth: out.PreAuthToken}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	close(pending)
	next := func(ctx context.Context) (*requestSpec, error) {
		p, ok := <-pending
		if !ok {
			return nil, errExhausted
		}
		// The next step is inside the server's window of T-1..T+1 and
		// later than any step used before waitForFreshStep returned.
		step := currentStep() + 1
		code, err := totp.GenerateCodeCustom(p.user.Secret, time.Unix(step*totpPeriod, 0), totpOpts)
		if err != nil {
			return nil, fmt.Errorf("code for %s: %w", p.user.Name, err)
		}
		p.user.LastStep = max(p.user.LastStep, step)
		req, err := a.newRequest(ctx, http.MethodPost, userPath(p.user.Name, "verify-totp"), p.preAuth, map[string]string{"totp": code})
		return &requestSpec{req: req, from: -1}, err
	}
	finish := func() error {
		if o.totpFile == "" {
			return nil
		}
		all, err := loadTOTPUsers(o)
		if err != nil {
			return err
		}
		copy(all, users)
		return saveTOTPUsers(o.totpFile, all)
	}
	return next, finish, nil
}

// waitForFreshStep waits until the step after the current one is later
// than every step already used, so that no code sent is a replay.
func waitForFreshStep(ctx context.Context, users []totpUser, log io.Writer) error {
	var last int64
	for _, u := range users {
		last = max(last, u.LastStep)
	}
	if currentStep()+1 > last {
		return nil
	}
	wait := time.Until(time.Unix((last)*totpPeriod, 0)) + 100*time.Millisecond
	fmt.Fprintf(log, "verify-totp: waiting %s for a TOTP step not used yet\n", wait.Round(time.Second))
	return sleep(ctx, wait)
}

// forEach calls fn for 0..n-1 from up to workers goroutines and returns
// the first error; after one, no new call starts.
func forEach(ctx context.Context, n, workers int, fn func(i int) error) error {
	var (
		next    atomic.Int64
		wg      sync.WaitGroup
		errOnce sync.Once
		first   error
		failed  atomic.Bool
	)
	for range min(workers, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !failed.Load() && ctx.Err() == nil {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				if err := fn(i); err != nil {
					errOnce.Do(func() { first = err })
					failed.Store(true)
				}
			}
		}()
	}
	wg.Wait()
	if first != nil {
		return first
	}
	return ctx.Err()
}
