package main

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestDatabaseFileModes: an admin command, as serve, refuses a database
// file, or its -wal or -shm, that others may write, and warns when others
// may read it; a file of mode 0600 passes without a word.
func TestDatabaseFileModes(t *testing.T) {
	env := baseEnv("MASTER_KEY="+testMasterKey, "NMAUTH_SECRET="+newRootSecret(t))
	for _, tc := range []struct {
		name            string
		db, wal, shm    os.FileMode // 0 for no such file
		refused, warned string      // what stderr names, "" for nothing
	}{
		{"private", 0o600, 0, 0, "", ""},
		{"private with its -wal and -shm", 0o600, 0o600, 0o600, "", ""},
		{"world-writable", 0o666, 0, 0, "nmauth.db may be written", ""},
		{"group-writable", 0o620, 0, 0, "nmauth.db may be written", ""},
		{"world-writable -wal", 0o600, 0o606, 0o600, "nmauth.db-wal may be written", ""},
		{"world-writable -shm", 0o600, 0o600, 0o602, "nmauth.db-shm may be written", ""},
		{"world-readable", 0o644, 0, 0, "", "may be read"},
		{"world-readable -shm", 0o600, 0o600, 0o604, "", "may be read"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			db := filepath.Join(dir, "nmauth.db")
			for name, mode := range map[string]os.FileMode{db: tc.db, db + "-wal": tc.wal, db + "-shm": tc.shm} {
				if mode == 0 {
					continue
				}
				if err := os.WriteFile(name, nil, 0o600); err != nil {
					t.Fatal(err)
				}
				if err := os.Chmod(name, mode); err != nil { // the umask spares it
					t.Fatal(err)
				}
			}
			r := runNmauthd(t, dir, env, "", "--db", db, "user", "list")
			switch {
			case tc.refused != "" && (r.code != exitFail || !strings.Contains(r.stderr, tc.refused) || !strings.Contains(r.stderr, "chmod 600")):
				t.Errorf("exit %d, %q; want exit 1 and %q with the remedy", r.code, r.stderr, tc.refused)
			case tc.refused == "" && r.code != exitOK:
				t.Errorf("exit %d, %q; want 0", r.code, r.stderr)
			case tc.refused == "" && tc.warned == "" && r.stderr != "":
				t.Errorf("stderr %q; want nothing", r.stderr)
			case tc.warned != "" && !(strings.Contains(r.stderr, "level=WARN") && strings.Contains(r.stderr, tc.warned)):
				t.Errorf("stderr %q; want a warning that the file %s", r.stderr, tc.warned)
			}
		})
	}
}

// TestDatabaseFileOwner: a database file that another user owns is
// refused, naming both user ids.
func TestDatabaseFileOwner(t *testing.T) {
	db := filepath.Join(t.TempDir(), "nmauth.db")
	if err := os.WriteFile(db, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil))
	if err := checkDatabaseFiles(db, os.Geteuid(), log); err != nil {
		t.Fatalf("own file refused: %v", err)
	}
	err := checkDatabaseFiles(db, os.Geteuid()+1, log)
	if err == nil || !strings.Contains(err.Error(), "belongs to user id") {
		t.Fatalf("a file of another user: %v, want refused", err)
	}
	if os.Geteuid() != 0 {
		return // only root can give the file away; the check above stands in
	}
	// As root, the real command on a file given to nobody.
	if err := os.Chown(db, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	env := baseEnv("MASTER_KEY="+testMasterKey, "NMAUTH_SECRET="+newRootSecret(t))
	r := runNmauthd(t, filepath.Dir(db), env, "", "--db", db, "user", "list")
	if r.code != exitFail || !strings.Contains(r.stderr, "belongs to user id 65534") {
		t.Errorf("exit %d, %q; want exit 1 naming the owner", r.code, r.stderr)
	}
}

// TestNewDatabaseFilesPrivate: under a umask that withholds nothing, the
// database serve makes, its -wal and -shm and its secret file are 0600.
func TestNewDatabaseFilesPrivate(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	dir := t.TempDir()
	db := filepath.Join(dir, "nmauth.db")
	d := startDaemon(t, dir, baseEnv("MASTER_KEY="+testMasterKey), "--db", db)
	for _, name := range []string{db, db + "-wal", db + "-shm", db + ".secret"} {
		fi, err := os.Stat(name)
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		if perm := fi.Mode().Perm(); perm != 0o600 {
			t.Errorf("%s: mode %04o, want 0600", filepath.Base(name), perm)
		}
	}
	d.stop()
}
