package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/shepherd-dev/shepherd/coord/recipe"
	"github.com/shepherd-dev/shepherd/server/auth"
)

// firstAdminName is the console account `shepherd up` makes when the
// cluster has none.
const firstAdminName = "admin"

// firstConsoleLogin makes the console's first admin when the cluster has
// no account yet, so that `shepherd up` alone gives a console one can log
// in to without a default password: the password is random and written
// to a file only the installation's user may read. It returns the line
// that tells the operator how to log in.
func firstConsoleLogin(ctx context.Context, s *recipe.Session, dataDir string) (string, error) {
	store := auth.NewStore(s, auth.Options{})
	users, err := store.Users(ctx)
	if err != nil {
		return "", fmt.Errorf("up: console accounts: %w", err)
	}
	if len(users) > 0 {
		return "log in with an existing account (shepherd ctl user list)", nil
	}
	secret := make([]byte, 18)
	if _, err := rand.Read(secret); err != nil {
		return "", err
	}
	pw := base64.RawURLEncoding.EncodeToString(secret)
	file := filepath.Join(dataDir, "console-admin.password")
	if err := os.WriteFile(file, []byte(pw+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("up: first console login: %w", err)
	}
	if err := os.Chmod(file, 0o600); err != nil { // WriteFile keeps an existing file's mode
		return "", err
	}
	err = store.AddUser(ctx, firstAdminName, auth.Admin, []byte(pw), false)
	if errors.Is(err, auth.ErrUserExists) {
		return "log in with an existing account (shepherd ctl user list)", nil
	}
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("user %s, password in %s (change it on the console's users page)", firstAdminName, file), nil
}
