package coord

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
)

// AdminUser is the user name of the generated admin credential.
const AdminUser = "shepherd"

// adminAuthPath is where the admin credential lives.
func (c *Config) adminAuthPath() string {
	if c.AdminAuthFile != "" {
		return c.AdminAuthFile
	}
	return filepath.Join(c.DataDir, "admin.auth")
}

// AdminAuthFile is the path of the admin credential the server wrote at
// its first start (see ensureAdminAuth): the credential every process of
// `shepherd up` dials with, and the one to give ctl.
func (s *Server) AdminAuthFile() string { return s.cfg.adminAuthPath() }

// ensureAdminAuth makes sure the admin credential file exists and only its
// owner can read it. On first start it writes one line,
// "shepherd:<password>", with 32 random URL-safe base64 characters: a plain
// digest identity (addauth digest shepherd:<password>) that Shepherd's
// processes and ctl use through --auth-file. The server itself gives it no
// privilege; it is the identity their ACLs name. An existing file is never
// rewritten, and one that its group or others may read or write is
// refused, as ssh refuses such a private key.
func ensureAdminAuth(path string, log *slog.Logger) error {
	fi, err := os.Stat(path)
	if err == nil {
		if perm := fi.Mode().Perm(); perm&0o077 != 0 {
			return fmt.Errorf("%w: %s is accessible by others (mode %04o): run `chmod 600 %s` (and change the password in it if others may have read it)",
				ErrDataDir, path, perm, path)
		}
		if !fi.Mode().IsRegular() {
			return fmt.Errorf("%w: %s is not a regular file", ErrDataDir, path)
		}
		log.Info("admin credential", "file", path)
		return nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("coord: admin credential %s: %w", path, err)
	}
	var raw [24]byte // 24 random bytes are 32 base64 characters
	if _, err := rand.Read(raw[:]); err != nil {
		return fmt.Errorf("coord: generate admin credential: %w", err)
	}
	line := AdminUser + ":" + base64.RawURLEncoding.EncodeToString(raw[:]) + "\n"
	if err := writeNewFile(path, []byte(line)); err != nil {
		return fmt.Errorf("coord: write admin credential %s: %w", path, err)
	}
	log.Info("generated admin credential; give it to Shepherd's processes and ctl with --auth-file", "file", path)
	return nil
}

// writeNewFile creates path with data, mode 0600, atomically and only if
// it does not exist: the data goes to a temporary file in the same
// directory, which is then hard-linked into place, so a reader never sees a
// partial file and an existing one (say, written by a concurrent first
// start) is never replaced.
func writeNewFile(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	// CreateTemp makes the file 0600 already; say so for the reader.
	if err := os.Chmod(tmp, 0o600); err != nil {
		return err
	}
	if err := os.Link(tmp, path); err != nil {
		return err
	}
	return syncDir(filepath.Dir(path))
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
