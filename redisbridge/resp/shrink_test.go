package resp

import (
	"bytes"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"
)

// chunkReader hands out its chunks one per Read and, at each Read, notes
// what the Reader holds (observe runs on the reading goroutine).
type chunkReader struct {
	chunks  [][]byte
	observe func()
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if c.observe != nil {
		c.observe()
	}
	if len(c.chunks) == 0 {
		return 0, io.EOF
	}
	n := copy(p, c.chunks[0])
	if c.chunks[0] = c.chunks[0][n:]; len(c.chunks[0]) == 0 {
		c.chunks = c.chunks[1:]
	}
	return n, nil
}

// watchFreed notes r's large buffers now; the returned func fails the
// test unless each of them is collected (reachable from nowhere).
func watchFreed(t *testing.T, r *Reader) func() {
	t.Helper()
	var pending atomic.Int32
	watch := func(p unsafe.Pointer) {
		pending.Add(1)
		runtime.AddCleanup((*byte)(p), func(*atomic.Int32) { pending.Add(-1) }, &pending)
	}
	if cap(r.buf) > keepBufBytes {
		watch(unsafe.Pointer(unsafe.SliceData(r.buf)))
	}
	if cap(r.args) > keepArgs {
		watch(unsafe.Pointer(unsafe.SliceData(r.args)))
	}
	if cap(r.offs) > keepArgs {
		watch(unsafe.Pointer(unsafe.SliceData(r.offs)))
	}
	if cap(r.line) > keepLineBytes {
		watch(unsafe.Pointer(unsafe.SliceData(r.line)))
	}
	return func() {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for pending.Load() > 0 {
			if time.Now().After(deadline) {
				t.Fatalf("%d large buffers still reachable after the Reader shrank", pending.Load())
			}
			runtime.GC()
			time.Sleep(time.Millisecond) // cleanups run on their own goroutine after a collection
		}
	}
}

func multibulk(args ...string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	return b.Bytes()
}

// TestBuffersShrinkBeforeWaiting: after a large command, the Reader is
// back to a normal size by the time it waits for the client again; within
// a pipeline (input already buffered) it keeps its buffers.
func TestBuffersShrinkBeforeWaiting(t *testing.T) {
	manyArgs := make([]string, 5000)
	for i := range manyArgs {
		manyArgs[i] = "a"
	}
	cases := []struct {
		name string
		big  []byte
	}{
		{"one large argument", multibulk("SET", "k", strings.Repeat("v", 3<<20))},
		{"many arguments", multibulk(append([]string{"DEL"}, manyArgs...)...)},
		{"long inline line", []byte("PING " + strings.Repeat("x", 40<<10) + "\r\n")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			small := multibulk("PING")
			src := &chunkReader{chunks: [][]byte{c.big, small}}
			r := NewReader(src, Config{MaxBulkBytes: 4 << 20})
			var atWait []int
			src.observe = func() { atWait = append(atWait, r.ArgsMemory()) }
			if _, err := r.ReadCommand(); err != nil {
				t.Fatal(err)
			}
			grown := r.ArgsMemory()
			if grown <= keepBufBytes && grown <= 24*keepArgs {
				t.Fatalf("the large command grew the buffers to only %d bytes", grown)
			}
			// Every buffer the large command grew must become garbage, not
			// only leave the Reader's accounting.
			freed := watchFreed(t, r)
			atWait = nil
			args, err := r.ReadCommand() // waits for input: shrinks first
			if err != nil || len(args) != 1 || string(args[0]) != "PING" {
				t.Fatalf("next command: %q %v", args, err)
			}
			if len(atWait) == 0 {
				t.Fatal("the Reader did not wait for input")
			}
			if limit := keepBufBytes + keepLineBytes + 32*keepArgs; atWait[0] > limit {
				t.Fatalf("waiting with %d bytes of argument buffers (grown: %d), want <= %d", atWait[0], grown, limit)
			}
			freed()
			runtime.KeepAlive(r) // what is checked is that r itself no longer holds them
		})
	}
	t.Run("pipeline keeps its buffers", func(t *testing.T) {
		big := multibulk("SET", "k", strings.Repeat("v", 1<<20))
		r := NewReader(&chunkReader{chunks: [][]byte{append(big, multibulk("PING")...)}}, Config{})
		if _, err := r.ReadCommand(); err != nil {
			t.Fatal(err)
		}
		grown := r.ArgsMemory()
		if r.Buffered() == 0 {
			t.Skip("the pipeline did not stay buffered")
		}
		if _, err := r.ReadCommand(); err != nil {
			t.Fatal(err)
		}
		if r.ArgsMemory() != grown {
			t.Fatalf("a pipelined command reallocated: %d -> %d", grown, r.ArgsMemory())
		}
	})
}
