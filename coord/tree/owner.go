package tree

import "math"

// ZooKeeper keeps a znode's kind in its ephemeralOwner field: 0 for a
// persistent node, the owning session for an ephemeral, Long.MIN_VALUE for a
// container, and for a TTL node the top byte 0xff, a 16-bit feature field of
// zero and the TTL in the low 40 bits. We store the same encoding so that the
// state machine and its snapshots carry exactly what ZooKeeper's do; clients
// see 0 for containers and TTL nodes, as a 3.8 server shows them.
const (
	containerOwner int64 = math.MinInt64

	extendedMask    = int64(-1) << 56 // 0xff00000000000000
	reservedMask    = int64(0x00ffff0000000000)
	ttlValueMask    = int64(0x000000ffffffffff)
	extendedTTLBits = extendedMask // feature field 0 means TTL
)

// MaxTTL is the largest TTL, in milliseconds, a TTL node may have (2^40-1,
// about 34 years), as in ZooKeeper's EphemeralType.TTL.
const MaxTTL int64 = ttlValueMask

type ownerKind uint8

const (
	kindPersistent ownerKind = iota // ZooKeeper's EphemeralType.VOID
	kindSession                     // NORMAL: an ephemeral owned by a session
	kindContainer
	kindTTL
)

// kindOf classifies an ephemeralOwner value as ZooKeeper does with extended
// types enabled. A session id whose top byte is 0xff would read as a TTL,
// which is why session ids must keep their top byte below 0xff.
func kindOf(owner int64) ownerKind {
	switch {
	case owner&extendedMask == extendedMask && owner&reservedMask == 0:
		return kindTTL
	case owner == containerOwner:
		return kindContainer
	case owner == 0:
		return kindPersistent
	}
	return kindSession
}

// ttlOwner encodes ttl (already validated) as an ephemeralOwner value.
func ttlOwner(ttl int64) int64 { return extendedTTLBits | ttl }

// ttlOf returns the TTL encoded in a TTL node's owner field.
func ttlOf(owner int64) int64 { return owner & ttlValueMask }

// clientOwner is the ephemeralOwner a client sees: the session for an
// ephemeral, 0 for every other kind.
func clientOwner(owner int64) int64 {
	if kindOf(owner) == kindSession {
		return owner
	}
	return 0
}

// Create modes, decoded from the flags of a create request.
type createMode struct {
	ephemeral, sequential, container, ttl bool
}

// modeOf decodes create flags as ZooKeeper's CreateMode.fromFlag; ok is
// false for unknown flags.
func modeOf(flags int32) (m createMode, ok bool) {
	switch flags {
	case 0: // PERSISTENT
	case 1:
		m.ephemeral = true
	case 2:
		m.sequential = true
	case 3:
		m.ephemeral, m.sequential = true, true
	case 4:
		m.container = true
	case 5:
		m.ttl = true
	case 6:
		m.sequential, m.ttl = true, true
	default:
		return createMode{}, false
	}
	return m, true
}
