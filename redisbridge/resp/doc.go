// Package resp is the RESP (REdis Serialization Protocol) codec of the
// bridge: a Reader that parses client commands and a Writer that renders
// replies in RESP2 or RESP3.
//
// No maintained Go library serves both RESP2 and RESP3, so the codec is
// written here. Its responsibilities:
//
//  1. Reader.ReadCommand parses one command: a RESP array of bulk strings
//     ("*2\r\n$3\r\nGET\r\n$1\r\nk\r\n") or an inline command ("GET k\r\n",
//     split like redis-cli with quotes and escapes). Many commands are
//     parsed from one network read (bufio); Reader.Buffered tells the
//     server whether more pipelined input is waiting, so it flushes replies
//     once per batch.
//  2. Input is bounded by Config: arguments per command, bytes per bulk
//     string, bytes per inline line and bytes per command. A declared
//     length is never allocated up front: memory grows only with bytes
//     actually received.
//  3. Malformed input gives a *ProtocolError whose text is Redis' own
//     ("ERR Protocol error: invalid multibulk length", ...). The server
//     writes it and closes the connection, as Redis does.
//  4. Writer renders reply.Reply and the bridge's own shapes (maps, sets,
//     pushes, booleans, doubles) for the connection's protocol version:
//     RESP3 natively; RESP2 as Redis does (a map is a flat array, a double
//     is a bulk string, a null array is *-1, a boolean is an integer).
//
// The arguments ReadCommand returns alias the Reader's buffer and are
// valid only until the next call; CloneArgs copies them in one allocation.
package resp
