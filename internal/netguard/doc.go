// Package netguard holds what every listening port of a node (HTTP, RESP,
// peer) does the same way against floods and resource exhaustion, so the
// rule is written once:
//
//  1. Wrap the listener with Listen. Its Accept retries failed accepts
//     (EMFILE, ENFILE, ECONNABORTED, ...) with a backoff from 5 ms to 1 s,
//     as net/http does for temporary errors, and logs them at WARN at most
//     once per LogEvery. It returns an error only once the listener is
//     closed, so a serve loop over it stops only on Close. Err reports
//     whether the port accepts: nil, an accept error in progress, or why
//     accepting stopped without Close (for readiness checks).
//  2. Count each accepted connection with an AddrLimiter: at most a fixed
//     number open from one source IP, so one address cannot take every
//     slot of the port's connection cap.
//  3. Rate-limit noisy log lines with a RateLog.
package netguard
