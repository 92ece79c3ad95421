package changeevent

import "testing"

func TestAppendJSONString(t *testing.T) {
	for in, want := range map[string]string{
		`plain`: `"plain"`, "q\"b\\": `"q\"b\\"`, "nl\n\r\t": `"nl\n\r\t"`, "\x00\x1f": `"\u0000\u001f"`,
		"emoji 😀 ü": `"emoji 😀 ü"`, "ls\u2028ps\u2029": `"ls\u2028ps\u2029"`,
	} {
		if got := string(AppendJSONString(nil, in)); got != want {
			t.Errorf("AppendJSONString(%q) = %s, want %s", in, got, want)
		}
	}
}
