package dns

import (
	"fmt"
	"time"
)

// verdict is the Scanner's judgement of one address.
type verdict struct {
	healthy bool
	reason  string // why unhealthy
}

// judge decides whether address a is healthy: the 5-second rule of the
// seed for heartbeat-registered addresses (no heartbeat for longer than
// its TTL), and its active check failing failAfter times in a row
// (checkFails, counted by the Scanner). hbAge is the age of its last
// heartbeat on the scanner's clock (-1: none yet). Until settled — the
// scanner has been running without a gap for its grace period — an
// expired heartbeat changes nothing: after a failover or an outage of
// the coordination server the providers get the time to heartbeat again.
// A check result is acted on at once: it was just observed.
func judge(a AddressStatus, hbAge time.Duration, settled bool, checkFails, failAfter int) verdict {
	if a.Mode == "heartbeat" && a.TTL > 0 && (hbAge < 0 || hbAge > a.TTL) {
		if !settled {
			return verdict{healthy: a.Healthy, reason: reasonOf(a)}
		}
		if hbAge < 0 {
			return verdict{reason: fmt.Sprintf("no heartbeat yet (ttl %v)", a.TTL)}
		}
		return verdict{reason: fmt.Sprintf("no heartbeat for %v (ttl %v)", hbAge.Round(time.Millisecond), a.TTL)}
	}
	if a.Check != nil && checkFails >= failAfter {
		return verdict{reason: fmt.Sprintf("%s check failed %d times in a row", a.Check.Kind, checkFails)}
	}
	return verdict{healthy: true}
}

func reasonOf(a AddressStatus) string {
	if a.Unhealthy != nil {
		return a.Unhealthy.Reason
	}
	return ""
}
