// Package proc is the process harness every long-running `shepherd`
// command uses, so that a setting means the same thing in each of them and
// in `shepherd up`:
//
//   - one config-file mechanism (Config): a YAML file whose keys are the
//     command's flag names; a flag given on the command line or through
//     its environment variable wins; an unknown key or a bad value is an
//     error naming the key and the file;
//   - the session flags (SessionFlags: --zk, --session-timeout and the
//     security flags of internal/authflag) and the one way to dial them
//     (Dial);
//   - one HTTP mux per process (HTTP) serving /metrics and /health, into
//     which a process's parts install their handlers, as etcd's etcdhttp
//     does into a mux its caller owns;
//   - signals: the context a command runs under (SignalContext) and the
//     stop that ends a command before it started (Stopped).
//
// It wires; it must never know what a core, a scheduler or a collector
// does, nor read Shepherd's nodes.
package proc
