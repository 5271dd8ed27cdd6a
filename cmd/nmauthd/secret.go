package main

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"

	"github.com/nmauth/nmauth"
)

const envSecret = "NMAUTH_SECRET"

// rootSecrets are the root secrets and where they came from, for the log.
type rootSecrets struct {
	secrets [][]byte
	source  string // "env NMAUTH_SECRET" or the file's path
}

// loadRootSecrets takes the root secrets from NMAUTH_SECRET, or else from
// the file beside a SQLite database. The secret never goes into a
// database: whoever steals the database must not get the key that seals
// its TOTP secrets and signs its tokens.
//
// The file is made only when create is set, which the caller does for
// the server on a database that holds no accounts: an admin command, or a
// database whose secret file is lost, must not get a new secret that
// silently kills every token and TOTP secret.
func loadRootSecrets(getenv func(string) string, db string, create bool, log *slog.Logger) (rootSecrets, error) {
	if v := getenv(envSecret); v != "" {
		secrets, err := nmauth.ParseSecrets(v)
		if err != nil {
			return rootSecrets{}, fmt.Errorf("%s: %w", envSecret, err)
		}
		return rootSecrets{secrets: secrets, source: "env " + envSecret}, nil
	}
	if isPostgresDSN(db) {
		return rootSecrets{}, fmt.Errorf("%s is required with PostgreSQL: every replica must share one root secret, "+
			"kept outside the database; set it to 32 or more random bytes in hex, e.g. from openssl rand -hex 32", envSecret)
	}
	path := secretFilePath(db)
	if !create {
		secrets, err := loadSecretFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			return rootSecrets{}, fmt.Errorf("no root secret: %s is not set and %s does not exist; "+
				"restore that file, or set %s to the secret that wrote the database (admin commands and a database "+
				"that holds accounts never get a new one; nmauthd serve makes one for an empty database)", envSecret, path, envSecret)
		}
		return rootSecrets{secrets: secrets, source: path}, err
	}
	secrets, created, err := loadOrCreateSecretFile(path)
	if err != nil {
		return rootSecrets{}, err
	}
	if created {
		log.Info("created root secret file; keep it with the database and back it up apart from it", "path", path)
	}
	return rootSecrets{secrets: secrets, source: path}, nil
}

func secretFilePath(dbPath string) string { return dbPath + ".secret" }
