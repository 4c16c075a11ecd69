package redisbridge

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/auth"
	"github.com/locknode/locknode/cluster"
	"github.com/locknode/locknode/fsm"
	"github.com/locknode/locknode/redisbridge/resp"
)

// pipelineStep is one command of an ordering pipeline and the reply it
// must get (resp.Value.String form; a trailing "*" matches a prefix).
type pipelineStep struct {
	args []string
	want string
}

const incrScript = `return redis.call("incr", KEYS[1])`

// orderingPipeline mixes group-committed writes (SET, INCR, EVAL,
// EVALSHA) with everything that must wait for them: reads, MULTI/EXEC,
// WATCH, errors found by the bridge and by the FSM, unknown commands.
// Every reply depends on the writes sent before it on the connection.
func orderingPipeline(p string) []pipelineStep {
	k, nx, s := p+"k", p+"nx", p+"str"
	sha := fsm.ScriptSHA([]byte(incrScript))
	steps := []pipelineStep{
		{[]string{"SET", k, "0"}, `"OK"`},
		{[]string{"SET", s, "abc"}, `"OK"`},
	}
	for i := 1; i <= 40; i++ {
		steps = append(steps, pipelineStep{[]string{"INCR", k}, fmt.Sprint(i)})
	}
	steps = append(steps,
		pipelineStep{[]string{"GET", k}, `"40"`},
		pipelineStep{[]string{"EVAL", incrScript, "1", k}, "41"},
		pipelineStep{[]string{"EVALSHA", sha, "1", k}, "42"},
		pipelineStep{[]string{"INCR", s}, "(error ERR value is not an integer or out of range)"},
		pipelineStep{[]string{"EVAL", incrScript, "x", k}, "(error ERR value is not an integer or out of range)"},
		pipelineStep{[]string{"INCR", k}, "43"},
		pipelineStep{[]string{"SET", nx, "a", "NX", "PX", "10000"}, `"OK"`},
		pipelineStep{[]string{"SET", nx, "b", "NX", "PX", "10000"}, "(nil)"},
		pipelineStep{[]string{"GET", nx}, `"a"`},
		pipelineStep{[]string{"NOSUCHCMD", k}, "(error ERR unknown command*"},
		pipelineStep{[]string{"INCR", k}, "44"},
		pipelineStep{[]string{"WATCH", k}, `"OK"`},
		pipelineStep{[]string{"INCR", k}, "45"}, // breaks the WATCH
		pipelineStep{[]string{"MULTI"}, `"OK"`},
		pipelineStep{[]string{"INCR", k}, `"QUEUED"`},
		pipelineStep{[]string{"EXEC"}, "(nil)"},
		pipelineStep{[]string{"MULTI"}, `"OK"`},
		pipelineStep{[]string{"INCR", k}, `"QUEUED"`},
		pipelineStep{[]string{"EXEC"}, "*[46]"},
		pipelineStep{[]string{"INCR", k}, "47"},
		pipelineStep{[]string{"PING"}, `"PONG"`},
		pipelineStep{[]string{"INCR", k}, "48"},
		pipelineStep{[]string{"SET"}, "(error ERR wrong number of arguments*"},
		pipelineStep{[]string{"DEL", nx}, "1"},
		pipelineStep{[]string{"EXISTS", nx}, "0"},
		pipelineStep{[]string{"GET", k}, `"48"`},
	)
	return steps
}

// runPipeline sends steps as one pipeline and checks every reply in
// order.
func runPipeline(t *testing.T, c *rawConn, steps []pipelineStep) {
	t.Helper()
	var b strings.Builder
	for _, st := range steps {
		b.WriteString(cmdBytes(st.args...))
	}
	c.send(b.String())
	for i, st := range steps {
		got := c.read().String()
		ok := got == st.want
		if p, found := strings.CutSuffix(st.want, "*"); found {
			ok = strings.HasPrefix(got, p)
		}
		if !ok {
			t.Fatalf("step %d %v: reply %s, want %s", i, st.args, got, st.want)
		}
	}
}

// TestPipelineOrderFake: a pipeline's replies (and effects) are exactly
// those of its commands run one at a time, over the fake backend whose
// futures complete with varying delays.
func TestPipelineOrderFake(t *testing.T) {
	s, f := testServer(t, Config{})
	f.asyncDelays.Store(true)
	c := dialRaw(t, s)
	for round := range 3 {
		runPipeline(t, c, orderingPipeline(fmt.Sprintf("r%d:", round)))
	}
}

// TestPipelineOrderCluster: the same over a 3-node raft cluster, on the
// leader (writes group-commit through ApplyAsync) and on a follower
// (ApplyAsync forwards one at a time); a read right after the pipeline on
// another node sees its last write.
func TestPipelineOrderCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a raft cluster")
	}
	nodes := startBridgeCluster(t, 3)
	var leader, follower *bridgeNode
	eventually(t, 10*time.Second, "a leader with its clock set", func() bool {
		for _, b := range nodes {
			if b.node.IsLeader() {
				leader = b
			}
		}
		return leader != nil
	})
	for _, b := range nodes {
		if b != leader {
			follower = b
			break
		}
	}
	for _, tt := range []struct {
		name string
		b    *bridgeNode
	}{{"leader", leader}, {"follower", follower}} {
		t.Run(tt.name, func(t *testing.T) {
			c := dialRaw(t, tt.b.srv)
			runPipeline(t, c, orderingPipeline(tt.name+":"))
			other := dialRaw(t, nodes[0].srv)
			if got := other.do("GET", tt.name+":k").String(); got != `"48"` {
				t.Fatalf("GET on another node = %s", got)
			}
		})
	}
}

// inflightNode counts the proposals it has in flight (proposed, not yet
// done), and the most at once.
type inflightNode struct {
	*cluster.Node
	inflight, max atomic.Int64
}

func (n *inflightNode) ApplyAsync(ctx context.Context, cmd *fsm.Command) fsm.Future {
	f := n.Node.ApplyAsync(ctx, cmd)
	cur := n.inflight.Add(1)
	for m := n.max.Load(); cur > m && !n.max.CompareAndSwap(m, cur); m = n.max.Load() {
	}
	// Ends when the proposal is done (the test's cluster answers every
	// proposal: nodes are killed only at cleanup, after the test waited).
	go func() {
		<-f.Done()
		n.inflight.Add(-1)
	}()
	return f
}

// TestPipelineGroupCommit: a deep pipeline of SET NX on the leader is
// proposed without waiting for each commit (many proposals in flight at
// once, so they share raft's log writes), and every reply is right and in
// order.
func TestPipelineGroupCommit(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a raft cluster")
	}
	nodes := startRaftCluster(t, 3)
	var leader *cluster.Node
	eventually(t, 10*time.Second, "a leader with its clock set", func() bool {
		for _, nd := range nodes {
			if nd.IsLeader() {
				leader = nd
			}
		}
		return leader != nil
	})
	in := &inflightNode{Node: leader}
	srv := testServerOn(t, in, Config{})
	c := dialRaw(t, srv)
	const n = 500
	var b strings.Builder
	for i := range n {
		b.WriteString(cmdBytes("SET", fmt.Sprintf("gc:%d", i%(n-50)), fmt.Sprint("tok", i), "NX", "PX", "60000"))
	}
	start := time.Now()
	c.send(b.String())
	for i := range n {
		want := `"OK"`
		if i >= n-50 {
			want = "(nil)" // the key was set earlier in this pipeline
		}
		if got := c.read().String(); got != want {
			t.Fatalf("SET %d: %s, want %s", i, got, want)
		}
	}
	t.Logf("%d pipelined SET NX in %v, at most %d in flight", n, time.Since(start), in.max.Load())
	if m := in.max.Load(); m < 10 {
		t.Fatalf("at most %d proposals in flight: the pipeline waited for commits", m)
	}
}

// TestPipelineClose: Close while pipelined writes are in flight returns,
// and what the client reads is the replies of a prefix of its commands,
// in order (a write the server proposed is answered before the
// connection closes).
func TestPipelineClose(t *testing.T) {
	s, f := testServer(t, Config{})
	f.asyncDelays.Store(true)
	c := dialRaw(t, s)
	const n = 300
	c.send(strings.Repeat(cmdBytes("INCR", "closing"), n))
	if got := c.read().String(); got != "1" {
		t.Fatalf("first reply %s", got)
	}
	closed := make(chan error, 1)
	// Ends when Close returns.
	go func() { closed <- s.Close() }()
	got := 1
	for {
		c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
		v, err := resp.ReadValue(c.br)
		if err != nil {
			break
		}
		got++
		if v.String() != fmt.Sprint(got) {
			t.Fatalf("reply %d: %s", got, v)
		}
	}
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return")
	}
	var applied int64
	if err := f.Read(context.Background(), true, func(tb *fsm.Table, now int64) {
		r, _ := tb.Read(now, [][]byte{[]byte("GET"), []byte("closing")})
		fmt.Sscan(r.Str, &applied)
	}); err != nil {
		t.Fatal(err)
	}
	if int64(got) != applied {
		t.Fatalf("%d replies read, %d writes applied", got, applied)
	}
}

// TestPipelineAdmission: writes the admission gate refuses (a key outside
// the user's patterns, a wrong arity, an election's lock) get their
// refusals in order among group-committed writes, and change nothing.
func TestPipelineAdmission(t *testing.T) {
	us, err := auth.Parse(strings.NewReader("user app on >p ~k* ~" + api.ElectionPrefix + "* +@read +@write\n"))
	if err != nil {
		t.Fatal(err)
	}
	s, f := testServer(t, Config{Users: auth.NewStoreFrom(us, nil)})
	f.asyncDelays.Store(true)
	c := dialRaw(t, s)
	if got := c.do("AUTH", "app", "p").String(); got != `"OK"` {
		t.Fatalf("AUTH: %s", got)
	}
	elect := api.ElectionPrefix + "e"
	runPipeline(t, c, []pipelineStep{
		{[]string{"SET", "k1", "0"}, `"OK"`},
		{[]string{"INCR", "k1"}, "1"},
		{[]string{"SET", "other", "1"}, "(error NOPERM*"},
		{[]string{"INCR", "k1"}, "2"},
		{[]string{"INCR", "k1", "x"}, "(error ERR wrong number of arguments for 'incr' command)"},
		{[]string{"INCR", "k1"}, "3"},
		{[]string{"SET", elect, "x"}, "(error " + msgElectionKey + ")"},
		{[]string{"INCR", "k1"}, "4"},
		{[]string{"GET", elect}, "(nil)"},
		{[]string{"GET", "k1"}, `"4"`},
	})
	// The refused writes left no key (read past the user's patterns).
	var keys []string
	if err := f.Read(context.Background(), false, func(tb *fsm.Table, now int64) {
		for _, e := range tb.Keys(now) {
			keys = append(keys, e.Key)
		}
	}); err != nil {
		t.Fatal(err)
	}
	if len(keys) != 1 || keys[0] != "k1" {
		t.Fatalf("keys after the pipeline: %v, want [k1]", keys)
	}
}
