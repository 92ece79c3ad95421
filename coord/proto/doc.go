// Package proto is ZooKeeper's wire format: the jute encoding, the request
// and response records, op codes, error codes and event types.
//
// Everything here is a pure function of bytes: no I/O, no goroutines, no
// server or client state, so every decoder can be fuzzed in isolation. The
// framing (a 4-byte big-endian length before each packet) is left to the
// transport.
//
// Records follow the names of zookeeper.jute so that a reader of the Apache
// ZooKeeper sources can find their counterparts; the code is our own.
//
// Where things are:
//
//	codec.go      Encoder, Decoder (sticky error), Record
//	types.go      op codes, error codes, modes, events, Id, ACL, Stat
//	session.go    RequestHeader, ReplyHeader, ConnectRequest/Response
//	auth.go       AuthPacket, SASL, whoAmI
//	requests.go   node requests (create, getData, setACL …)
//	responses.go  node responses and ErrorResponse
//	watches.go    WatcherEvent, SetWatches(2), addWatch, removeWatches
//	multi.go      multi and multiRead requests and responses
//	dispatch.go   NewRequest and DecodeRequest: op code to request record
//	path.go       ValidatePath, ZooKeeper's znode path rules
//
// A server reading a packet decodes a RequestHeader, then hands the rest to
// DecodeRequest. ZooKeeper 3.8 answers a body it cannot decode with
// ErrMarshallingError, an op code it does not know with ErrUnimplemented and
// an invalid path with ErrBadArguments.
//
// Decoders never trust a length prefix beyond the bytes left in the packet,
// and ignore trailing bytes (newer clients may append fields).
package proto
