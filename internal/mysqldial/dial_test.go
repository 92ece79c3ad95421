package mysqldial

import (
	"context"
	"database/sql/driver"
	"errors"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-sql-driver/mysql"
)

// ping opens a pool to addr as every Shepherd process does and pings.
func ping(t testing.TB, addr string) error {
	t.Helper()
	cfg := mysql.NewConfig()
	cfg.Net, cfg.Addr, cfg.User, cfg.Passwd = "tcp", addr, "u", "p"
	cfg.Timeout = 30 * time.Second
	db, err := OpenDB(cfg, nil)
	if err != nil {
		t.Fatalf("OpenDB %s: %v", addr, err)
	}
	defer db.Close()
	return db.PingContext(context.Background())
}

// syncerConnect connects to addr as go-mysql's binlog syncer does
// (client.ConnectWithDialer with its Dialer), under the guard.
func syncerConnect(addr string) error {
	d := NewDialer(addr, nil)
	return d.Guard(func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := client.ConnectWithDialer(ctx, "tcp", addr, "u", "p", "", d.Dial)
		if err == nil {
			c.Close()
		}
		return err
	})
}

func fakeServer(t testing.TB, handshake []byte, replies ...[]byte) *FakeServer {
	t.Helper()
	f, err := NewFakeServer(handshake, replies...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	return f
}

// The 32-byte handshake of the attack panicked inside go-sql-driver; it is
// now an error naming the server, on both client libraries' paths.
func TestMalformedHandshakeIsAnErrorNotAPanic(t *testing.T) {
	f := fakeServer(t, MalformedHandshake())
	want := "the server at " + f.Addr() + " sent a malformed handshake"
	for name, connect := range map[string]func() error{
		"database/sql":  func() error { return ping(t, f.Addr()) },
		"binlog syncer": func() error { return syncerConnect(f.Addr()) },
	} {
		err := connect()
		if !errors.Is(err, ErrMalformedHandshake) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want ErrMalformedHandshake saying %q", name, err, want)
		}
	}
	if err := ping(t, f.Addr()); HandshakeAccepted(err) {
		t.Errorf("a malformed handshake counts as accepted: %v", err)
	}
}

// HandshakeAccepted tells a server's own refusal of the login from every
// failure before a handshake was parsed.
func TestHandshakeAccepted(t *testing.T) {
	denied := fakeServer(t, HandshakeV10("8.0.36"), ErrPacket(1045, "28000", "Access denied for user 'u'"))
	errFirst := fakeServer(t, ErrPacket(1130, "HY000", "Host is not allowed to connect"))
	notMySQL := fakeServer(t, []byte("HTTP/1.1 400 Bad Request\r\n\r\n"))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()

	err = ping(t, denied.Addr())
	var me *mysql.MySQLError
	if !HandshakeAccepted(err) || !errors.As(err, &me) || me.Number != 1045 {
		t.Errorf("access denied after a handshake: got %v (accepted %v), want the server's 1045", err, HandshakeAccepted(err))
	}
	for name, addr := range map[string]string{"error before handshake": errFirst.Addr(), "not MySQL": notMySQL.Addr(), "closed port": closed} {
		err := ping(t, addr)
		if err == nil || HandshakeAccepted(err) {
			t.Errorf("%s: got %v (accepted %v), want a failure before any handshake", name, err, HandshakeAccepted(err))
		}
	}
}

// FuzzHandshake feeds arbitrary first packets to the connect of both
// client libraries, as cores, the monitor and the dry run make it: no
// input may panic, none is a successful login (the fake server never
// says OK), and the handshake check leaves no panic for the recovery to
// catch (which would leak the driver's watcher goroutine).
func FuzzHandshake(f *testing.F) {
	f.Add(MalformedHandshake())
	f.Add(HandshakeV10("8.0.36"))
	f.Add(HandshakeV10("10.11.6-MariaDB"))
	f.Add(ErrPacket(1040, "08004", "Too many connections"))
	f.Add([]byte{0xff})
	f.Add([]byte{10})
	f.Add([]byte{})
	f.Add([]byte("SSH-2.0-OpenSSH_9.6\r\n"))
	// One server for every input: a listener each would use up the
	// loopback's ports (each leaves its port in TIME_WAIT).
	s := fakeServer(f, nil)
	f.Fuzz(func(t *testing.T, handshake []byte) {
		s.SetHandshake(handshake)
		before := recoveredPanics.Load()
		if err := ping(t, s.Addr()); err == nil {
			t.Fatal("database/sql: login succeeded against a server that never said OK")
		}
		if err := syncerConnect(s.Addr()); err == nil {
			t.Fatal("binlog syncer: login succeeded against a server that never said OK")
		}
		if n := recoveredPanics.Load() - before; n != 0 {
			t.Fatalf("%d client-library panics got past checkHandshake", n)
		}
	})
}

// panicking is a driver connector whose Connect panics, as go-sql-driver's
// did on the 32-byte handshake.
type panicking struct{ driver.Connector }

func (panicking) Connect(context.Context) (driver.Conn, error) { panic("index out of range") }

// Should a handshake pass the check and still make a client library
// panic (or a panic come later in the login), the recovery at the dial
// boundary turns it into the error, for both libraries.
func TestPanicAtTheDialBoundaryIsRecovered(t *testing.T) {
	before := recoveredPanics.Load()
	c := &connector{inner: panicking{}, addr: "192.0.2.1:3306", timeout: time.Second, log: slog.New(slog.DiscardHandler)}
	if _, err := c.Connect(context.Background()); !errors.Is(err, ErrMalformedHandshake) || !strings.Contains(err.Error(), "192.0.2.1:3306") {
		t.Errorf("database/sql connector: %v, want ErrMalformedHandshake naming the server", err)
	}
	err := NewDialer("192.0.2.1:3306", nil).Guard(func() error { panic("slice bounds out of range") })
	if !errors.Is(err, ErrMalformedHandshake) {
		t.Errorf("binlog syncer guard: %v, want ErrMalformedHandshake", err)
	}
	if n := recoveredPanics.Load() - before; n != 2 {
		t.Errorf("%d panics counted, want 2", n)
	}
}

// Real servers' handshakes pass the check: they are what every test
// against MariaDB dials too; these are the layouts of MySQL 8 and of a
// server announcing a longer scramble.
func TestCheckHandshakeAcceptsWellFormed(t *testing.T) {
	long := HandshakeV10("8.0.36")
	scrambleLenAt := 1 + len("8.0.36") + 1 + 15 + 5
	long[scrambleLenAt] = 30 // 22 bytes of part 2, the plugin name's NUL among them
	for name, p := range map[string][]byte{"mysql 8": HandshakeV10("8.0.36"), "mariadb": HandshakeV10("5.5.5-10.11.6-MariaDB"), "long scramble": long,
		"error instead": ErrPacket(1130, "HY000", "Host '10.0.0.1' is not allowed to connect to this MariaDB server")} {
		if err := checkHandshake(p); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}
