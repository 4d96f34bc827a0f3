// Package netfwd lets a child in its own network namespace reach the few
// loopback TCP ports its policy allows, and nothing else.
//
// A fresh network namespace has only lo, down. Inside it, LoopbackUp brings
// lo up and Serve listens on 127.0.0.1:PORT (and [::1]:PORT when the
// namespace has IPv6 loopback) for each forwarded port. Each accepted
// connection becomes one request on a control socket, a unix
// SOCK_SEQPACKET pair made by Pair whose host end stays with the host
// process. There, Host calls the host's dial callback with ("tcp",
// "127.0.0.1:PORT") and passes the connected socket back with SCM_RIGHTS;
// Serve then copies bytes both ways until each side has sent EOF
// (CloseWrite forwards a half-close), or until either side fails.
//
// Guarantees:
//   - The host connects only what its dial callback returned. The namespace
//     side names a port, never an address or a network: Host always asks the
//     callback for "tcp" to "127.0.0.1:PORT". A refused request gets a short
//     reason back and its accepted connection is closed; nothing is dialled.
//   - The namespace side holds at most 256 tunnels (requests waiting for an
//     answer included); a connection accepted beyond that is closed at once,
//     before any request. Host treats more than 256 requests in flight as a
//     protocol violation.
//   - Every message is bounded (wire.go: at most 256 bytes, at most one
//     descriptor) and checked. A malformed message, a truncated one, an
//     unexpected descriptor or an unknown request id ends the session: Host
//     and Serve return an error wrapping ErrMalformed, and descriptors that
//     arrived with a bad message are closed.
//   - Serve and Host return only after every goroutine they started has
//     ended. Serve closes its listeners and every tunnel before returning;
//     Host cancels the context of dials still running and waits for them.
//   - Received descriptors are close-on-exec, so a child the namespace side
//     starts later does not inherit tunnels.
//
// Neither Serve nor Host closes the *os.File it is given: the caller does,
// after they return. The host must close its copy of the namespace end
// once the child has started (exec.Cmd.ExtraFiles dups it), or Host never
// sees the child's end close.
//
// # Not guaranteed
//
//   - Only TCP to the forwarded loopback ports. UDP, ICMP, other ports and
//     every non-loopback address have no route in the namespace; the
//     package adds none.
//   - The namespace side is not trusted, and Host does not try to: any
//     process there that holds (or ptraces the holder of) the control
//     socket can ask for any port. The dial callback is the only check.
//   - The host does not check what its callback returned: whatever stream
//     socket comes back is passed in, wherever it is connected.
//   - No timeout of its own: a dial lasts as long as the callback lets it,
//     and an idle tunnel stays open until a side closes or Serve stops.
//   - A refused client is only closed: it sees EOF (or a reset, if it had
//     sent data), never the reason.
//   - Linux only; elsewhere every function returns errors.ErrUnsupported.
//
// docs/threat-model.md states what the sandbox as a whole guarantees.
package netfwd
