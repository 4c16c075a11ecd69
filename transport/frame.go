package transport

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"runtime"
	"sync"
	"time"
)

// MaxFrameSize bounds the body of one RPC frame (a request or a response).
// A peer announcing a longer frame is cut off; Call refuses a longer request.
const MaxFrameSize = 64 << 20

// Wire format of an RPC connection after its type byte, in both directions:
//
//	length uint32 big-endian   = 9 + len(body)
//	kind   byte                (frameKind)
//	id     uint64 big-endian   request id, chosen by the caller, echoed in the answer
//	body   length-9 bytes
const (
	frameLenField = 4
	frameHeader   = frameLenField + 1 + 8
)

type frameKind byte

const (
	kindRequest  frameKind = 1 // caller → server: body is the request
	kindCancel   frameKind = 2 // caller → server: the caller gave up on id; body empty
	kindResponse frameKind = 3 // server → caller: body is the handler's answer
	kindError    frameKind = 4 // server → caller: body is the handler's error text
)

func (k frameKind) String() string {
	switch k {
	case kindRequest:
		return "request"
	case kindCancel:
		return "cancel"
	case kindResponse:
		return "response"
	case kindError:
		return "error"
	}
	return fmt.Sprintf("kind(%d)", byte(k))
}

type frame struct {
	kind frameKind
	id   uint64
	body []byte
}

// appendFrame appends the encoding of one frame to dst. The caller checks
// len(body) <= MaxFrameSize.
func appendFrame(dst []byte, kind frameKind, id uint64, body []byte) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(frameHeader-frameLenField+len(body)))
	dst = append(dst, byte(kind))
	dst = binary.BigEndian.AppendUint64(dst, id)
	return append(dst, body...)
}

// readFrame reads one frame from r. hdr is scratch space the caller reuses.
// Any malformed input (short length, unknown kind, body longer than maxBody)
// returns an error wrapping ErrProtocol; the caller must then drop the
// connection, since the stream is no longer in sync.
func readFrame(r io.Reader, hdr *[frameHeader]byte, maxBody int) (frame, error) {
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return frame{}, err
	}
	n := binary.BigEndian.Uint32(hdr[:frameLenField])
	if n < frameHeader-frameLenField {
		return frame{}, fmt.Errorf("%w: frame length %d shorter than its header", ErrProtocol, n)
	}
	bodyLen := uint64(n) - (frameHeader - frameLenField)
	if bodyLen > uint64(maxBody) {
		return frame{}, fmt.Errorf("%w: frame body of %d bytes exceeds the limit of %d", ErrProtocol, bodyLen, maxBody)
	}
	f := frame{kind: frameKind(hdr[frameLenField]), id: binary.BigEndian.Uint64(hdr[frameLenField+1:])}
	if f.kind < kindRequest || f.kind > kindError {
		return frame{}, fmt.Errorf("%w: unknown frame %v", ErrProtocol, f.kind)
	}
	body, err := readBody(r, int(bodyLen))
	if err != nil {
		return frame{}, err
	}
	f.body = body
	return f, nil
}

// readBody reads exactly n bytes. Small bodies are read in one allocation;
// large ones grow as bytes actually arrive, so a lying length prefix costs
// only as much memory as the peer really sends.
func readBody(r io.Reader, n int) ([]byte, error) {
	const chunk = 64 << 10
	if n <= chunk {
		b := make([]byte, n)
		if _, err := io.ReadFull(r, b); err != nil {
			return nil, unexpectedEOF(err)
		}
		return b, nil
	}
	b := make([]byte, 0, chunk)
	for len(b) < n {
		if len(b) == cap(b) {
			nb := make([]byte, len(b), min(2*cap(b), n))
			copy(nb, b)
			b = nb
		}
		m, err := io.ReadFull(r, b[len(b):cap(b)])
		b = b[:len(b)+m]
		if err != nil {
			return nil, unexpectedEOF(err)
		}
	}
	return b, nil
}

// unexpectedEOF reports a stream that ended inside a frame as such.
func unexpectedEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// frameWriter batches outgoing frames of one connection. Senders append to
// a pending buffer and never block on the network; one writer goroutine
// (run) swaps the buffer out and writes everything queued in one Write. A
// lone frame is written as soon as the writer wakes (latency first); frames
// queued while a write is in progress go out together in the next one
// (the group-commit hot path: many small answers, few syscalls).
type frameWriter struct {
	conn    net.Conn
	timeout time.Duration // write deadline for each batch; a peer that stops reading is cut off

	mu     sync.Mutex
	pend   []byte
	closed bool
	wake   chan struct{} // capacity 1: "pend may be non-empty"
}

func newFrameWriter(conn net.Conn, timeout time.Duration) *frameWriter {
	return &frameWriter{conn: conn, timeout: timeout, wake: make(chan struct{}, 1)}
}

// send queues a frame. It reports false when the writer has stopped.
func (w *frameWriter) send(kind frameKind, id uint64, body []byte) bool {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return false
	}
	w.pend = appendFrame(w.pend, kind, id, body)
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default: // a wake-up is already pending; it will see this frame
	}
	return true
}

// run writes queued frames until done is closed (returns nil) or a write
// fails (returns the error). Either way later sends are refused.
func (w *frameWriter) run(done <-chan struct{}) error {
	defer func() {
		w.mu.Lock()
		w.closed = true
		w.pend = nil
		w.mu.Unlock()
	}()
	var buf []byte
	for {
		select {
		case <-done:
			return nil
		case <-w.wake:
		}
		// Let runnable senders queue their frames first, so they share
		// this write. When nothing else is runnable this returns at once.
		runtime.Gosched()
		w.mu.Lock()
		buf, w.pend = w.pend, buf[:0]
		w.mu.Unlock()
		if len(buf) == 0 {
			continue
		}
		if w.timeout > 0 {
			if err := w.conn.SetWriteDeadline(time.Now().Add(w.timeout)); err != nil {
				return err
			}
		}
		if _, err := w.conn.Write(buf); err != nil {
			return err
		}
		if cap(buf) > 1<<20 {
			buf = nil // don't pin a huge buffer after one big frame
		}
	}
}
