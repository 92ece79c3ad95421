package hostallow

import (
	"errors"
	"testing"
)

func TestList(t *testing.T) {
	a, err := Parse([]string{"10.0.0.0/8", "192.168.1.7", "DB1.example.com.", "::1"})
	if err != nil {
		t.Fatal(err)
	}
	for host, want := range map[string]bool{
		"10.1.2.3": true, "11.0.0.1": false, "192.168.1.7": true, "192.168.1.8": false,
		"db1.example.com": true, "db1.EXAMPLE.com.": true, "db2.example.com": false,
		"[::1]": true, "::ffff:10.0.0.1": true, "localhost": false,
	} {
		if a.Contains(host) != want {
			t.Errorf("Contains(%s) = %v, want %v", host, !want, want)
		}
	}
	if (List{}).Contains("10.0.0.1") || !(List{}).Empty() || a.Empty() {
		t.Error("an empty list contains a host, or a list is empty")
	}
	if _, err := Parse([]string{"db 1!"}); !errors.Is(err, ErrEntry) {
		t.Errorf("Parse(db 1!) = %v, want ErrEntry", err)
	}
}
