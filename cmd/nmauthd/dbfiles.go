package main

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
)

// checkDatabaseFiles refuses a SQLite database file, or its -wal or -shm
// file, that another user than uid owns or that users other than its
// owner may write: they hold password hashes and sealed TOTP secrets, and
// whoever may write them may make accounts of their own. It warns when
// others may read one, and leaves out files that do not exist yet, which
// SQLite makes with the database file's mode and owner.
func checkDatabaseFiles(path string, uid int, log *slog.Logger) error {
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		fi, err := os.Stat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("database file: %w", err)
		}
		if owner, ok := fileOwner(fi); ok && owner != uid {
			return fmt.Errorf("database file %s belongs to user id %d, not to the user nmauthd runs as (%d); "+
				"chown it to that user, or run nmauthd as its owner", p, owner, uid)
		}
		perm := fi.Mode().Perm()
		if perm&0o022 != 0 {
			return fmt.Errorf("database file %s may be written by users other than its owner (mode %04o); "+
				"chmod 600 it (and its -wal and -shm)", p, perm)
		}
		if perm&0o044 != 0 {
			log.Warn("database file may be read by users other than its owner; chmod 600 it",
				"path", p, "mode", fmt.Sprintf("%04o", perm))
		}
	}
	return nil
}
