// Package tlsutil builds the TLS configurations locknode serves and dials
// with, re-reads certificates on demand (SIGHUP), and issues throwaway
// certificates for `locknode dev --tls` and tests.
//
// # Your responsibilities
//
//  1. Load a key pair with NewKeyPair; give ServerConfig or ClientConfig
//     the pair (and a CA pool from LoadCAPool where peers must present a
//     certificate).
//  2. Call KeyPair.Reload when the files change (cmd/locknode does on
//     SIGHUP). New handshakes use the new certificate; established
//     connections keep theirs. A failed reload keeps the old one.
//  3. Peers are identified by their certificate's Common Name, which is
//     the node id (NodeID); issue node certificates that way.
package tlsutil
