package testpeer

import (
	"fmt"
	"io"
	"net"
	"time"
)

// fourLetterTimeout bounds one four-letter-word exchange. A healthy server
// answers in milliseconds; a JVM still starting may accept and then hang.
const fourLetterTimeout = 5 * time.Second

// FourLetter sends a four-letter word (ruok, srvr, mntr, …) to the server
// at addr and returns its whole answer; the server closes the connection
// after answering.
func FourLetter(addr, word string) (string, error) {
	if len(word) != 4 {
		return "", fmt.Errorf("testpeer: four-letter word %q has %d letters", word, len(word))
	}
	c, err := net.DialTimeout("tcp", addr, fourLetterTimeout)
	if err != nil {
		return "", fmt.Errorf("testpeer: %s to %s: %w", word, addr, err)
	}
	defer c.Close()
	if err := c.SetDeadline(time.Now().Add(fourLetterTimeout)); err != nil {
		return "", fmt.Errorf("testpeer: %s to %s: %w", word, addr, err)
	}
	if _, err := io.WriteString(c, word); err != nil {
		return "", fmt.Errorf("testpeer: send %s to %s: %w", word, addr, err)
	}
	b, err := io.ReadAll(c)
	if err != nil {
		return string(b), fmt.Errorf("testpeer: read %s answer from %s: %w", word, addr, err)
	}
	return string(b), nil
}
