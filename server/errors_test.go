package server

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/shepherd-dev/shepherd/core"
)

// TestClassifyPositionRefusals: each way a reset-position is refused has
// a code of its own, not "internal".
func TestClassifyPositionRefusals(t *testing.T) {
	for _, tc := range []struct {
		err  error
		code string
	}{
		{core.ErrPositionBehind, "position_behind"},
		{core.ErrPositionUnordered, "position_unordered"},
		{core.ErrPositionNotOnSource, "position_not_on_source"},
	} {
		ae := classify(fmt.Errorf("core: reset position of task %q: %w", "orders", tc.err))
		if ae.Status != http.StatusConflict || ae.Code != tc.code {
			t.Errorf("classify(%v) = %d %s, want 409 %s", tc.err, ae.Status, ae.Code, tc.code)
		}
	}
}
