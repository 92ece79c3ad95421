package bench

import (
	"context"
)

// runSessionChurn opens and closes sessions from Clients goroutines, one
// at a time each: a session is one request only in name, so InFlight does
// not apply. An operation is connect, wait for the server to establish the
// session, close and wait for the server to confirm: two transactions on
// the server (createSession, closeSession).
func runSessionChurn(ctx context.Context, e *env) (Result, error) {
	serial := *e
	serial.o.InFlight = 1
	if e.o.Client == ClientWire {
		return serial.measure(ctx, func(*worker) error {
			s, err := dialWire(ctx, e.o.Addr)
			if err != nil {
				return err
			}
			return s.close()
		})
	}
	return serial.measure(ctx, func(*worker) error {
		conn, err := connect(ctx, e.o.Addr, e.log)
		if err != nil {
			return err
		}
		conn.Close()
		return nil
	})
}
