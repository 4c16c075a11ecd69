package redisbridge

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/locknode/locknode/fsm"
	"github.com/locknode/locknode/redisbridge/resp"
)

// groupingBackend holds the writes proposed inside an async group, as a
// leader holds a group's renewals: their futures complete only once the
// group has ended.
type groupingBackend struct {
	*fakeBackend
	mu      sync.Mutex
	open    int // groups begun and not ended
	begun   int
	bad     bool          // a group ended that was not open
	release chan struct{} // closed when the open group ends
}

func (b *groupingBackend) BeginAsyncGroup() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.open == 0 {
		b.release = make(chan struct{})
	}
	b.open++
	b.begun++
}

func (b *groupingBackend) EndAsyncGroup() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.open == 0 {
		b.bad = true
		return
	}
	if b.open--; b.open == 0 {
		close(b.release)
	}
}

func (b *groupingBackend) ApplyAsync(ctx context.Context, cmd *fsm.Command) fsm.Future {
	f := b.fakeBackend.ApplyAsync(ctx, cmd)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.open == 0 {
		return f
	}
	return heldFuture{f, b.release}
}

func (b *groupingBackend) state() (open, begun int, bad bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.open, b.begun, b.bad
}

// heldFuture is done once its group ended and its write is.
type heldFuture struct {
	fsm.Future
	release chan struct{}
}

func (f heldFuture) Done() <-chan struct{} {
	<-f.release
	return f.Future.Done()
}

func (f heldFuture) Result() (fsm.Result, error) {
	<-f.release
	return f.Future.Result()
}

func setCmd(key, val string) string {
	return "*3\r\n$3\r\nSET\r\n$" + itoa(len(key)) + "\r\n" + key + "\r\n$" + itoa(len(val)) + "\r\n" + val + "\r\n"
}

// A pipeline's writes are proposed inside one async group, ended once its
// input is used up, also when the pipeline stops in the middle of a
// command: its complete writes are answered while the connection waits
// for the rest (a group left open there would hold every proposal of the
// node until the client sends more). Begun and ended stay balanced.
func TestPipelineAsyncGroup(t *testing.T) {
	b := &groupingBackend{fakeBackend: newFakeBackend(t)}
	s := testServerOn(t, b, Config{})
	c := dialRaw(t, s)
	const n = 50
	var in strings.Builder
	for i := range n {
		in.WriteString(setCmd("k"+itoa(i), "v"))
	}
	partial := setCmd("last", "v")
	c.send(in.String() + partial[:len(partial)/2])
	for i := range n {
		c.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
		v, err := resp.ReadValue(c.br)
		if err != nil || v.Str != "OK" {
			t.Fatalf("reply %d of a pipeline cut in a command: %v %v (a group left open?)", i, v, err)
		}
	}
	if open, begun, bad := b.state(); open != 0 || begun == 0 || bad {
		t.Fatalf("waiting for the rest: %d groups open, %d begun, unbalanced %v", open, begun, bad)
	}
	c.send(partial[len(partial)/2:])
	if v := c.read(); v.Str != "OK" {
		t.Fatalf("the completed command: %v", v)
	}
	if v := c.do("GET", "k7"); v.Str != "v" {
		t.Fatalf("GET k7: %v", v)
	}
	if open, _, bad := b.state(); open != 0 || bad {
		t.Fatalf("after the pipeline: %d groups open, unbalanced %v", open, bad)
	}
}

// A pipelined write costs the bridge no Command and no copy of its
// arguments: the connection's entry aliases them (ApplyAsync keeps
// neither). Fails if building a pipelined EVALSHA's or SET's entry
// allocates again.
func TestPipelinedWriteAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes allocation")
	}
	s := testServerOn(t, newFakeBackend(t), Config{})
	client, server := net.Pipe()
	defer client.Close()
	defer server.Close()
	c := s.newConn(server)
	for _, args := range [][][]byte{
		{[]byte("EVALSHA"), []byte("D75BB8B5BD13532DDEDD17762E772346E39B321E"), []byte("1"), []byte("lock"), []byte("tok"), []byte("30000")},
		{[]byte("SET"), []byte("lock"), []byte("tok"), []byte("NX"), []byte("PX"), []byte("30000")},
	} {
		c.pipe.command(args) // the SHA1's lower case is made once per connection
		if a := testing.AllocsPerRun(200, func() {
			if cmd := c.pipe.command(args); cmd == nil || len(cmd.Args) == 0 {
				t.Fatalf("%s: not pipelined", args[0])
			}
			c.pipe.entry = fsm.Command{}
		}); a > 0 {
			t.Errorf("a pipelined %s's entry allocates %.1f times, want 0", args[0], a)
		}
	}
	if cmd := c.pipe.command([][]byte{[]byte("EVALSHA"), []byte("D75BB8B5BD13532DDEDD17762E772346E39B321E"), []byte("0")}); cmd.Key != "d75bb8b5bd13532ddedd17762e772346e39b321e" {
		t.Fatalf("EVALSHA's entry names the script %q, want its SHA1 in lower case", cmd.Key)
	}
}
