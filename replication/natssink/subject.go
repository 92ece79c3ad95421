package natssink

import "strings"

// SubjectToken turns a database or table name into one subject token:
// the characters NATS gives a meaning in subjects ('.', '*', '>'), white
// space and controls, and '%' itself are written as %XX (upper-case hex
// of the byte), so that different names never share a token. Other
// characters, letters outside ASCII included, are kept.
func SubjectToken(name string) string {
	if !strings.ContainsFunc(name, escaped) {
		return name
	}
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c < 0x80 && escaped(rune(c)) {
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&0xf])
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

func escaped(r rune) bool {
	return r == '.' || r == '*' || r == '>' || r == '%' || r <= ' ' || r == 0x7f
}
