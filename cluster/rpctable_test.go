package cluster

import (
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/locknode/locknode/fsm"
	"github.com/locknode/locknode/transport"
)

// Every peer RPC kind is declared once, in rpctable.go, and listed once
// in rpcKinds with a unique number and name, a handler, an authorisation
// and the cluster version that introduced it.
func TestRPCTable(t *testing.T) {
	declared := map[int]string{} // kind -> constant
	for _, d := range rpcKindDecls(t) {
		if d.file != "rpctable.go" {
			t.Errorf("%s: RPC kind %s declared outside rpctable.go", d.file, d.name)
		}
		k, _ := strconv.Atoi(d.value)
		if prev, dup := declared[k]; dup {
			t.Errorf("RPC kind %d declared twice: %s and %s", k, prev, d.name)
		}
		declared[k] = d.name
	}
	if len(declared) < 10 {
		t.Fatalf("found %d RPC kind constants", len(declared))
	}

	kinds, names := map[byte]bool{}, map[string]bool{}
	for _, r := range rpcKinds {
		if kinds[r.kind] {
			t.Errorf("kind %d listed twice in rpcKinds", r.kind)
		}
		if names[r.name] || r.name == "" || r.name == "unknown" {
			t.Errorf("kind %d: name %q empty, reserved or not unique", r.kind, r.name)
		}
		kinds[r.kind], names[r.name] = true, true
		if _, ok := declared[int(r.kind)]; !ok {
			t.Errorf("kind %d (%s) listed without a constant", r.kind, r.name)
		}
		if r.serve == nil {
			t.Errorf("kind %s has no handler", r.name)
		}
		if r.auth < authMember || r.auth > authMemberOrUnjoined {
			t.Errorf("kind %s has no authorisation", r.name)
		}
		if r.version == 0 || r.version > fsm.MaxClusterVersion {
			t.Errorf("kind %s: cluster version %d outside 1..%d", r.name, r.version, fsm.MaxClusterVersion)
		}
		if rpcByKind[r.kind] == nil || rpcByKind[r.kind].name != r.name || rpcName(r.kind) != r.name {
			t.Errorf("kind %s not indexed", r.name)
		}
	}
	for k, name := range declared {
		if !kinds[byte(k)] {
			t.Errorf("constant %s (%d) not listed in rpcKinds", name, k)
		}
	}
	if got := rpcName(200); got != "unknown" {
		t.Errorf("rpcName of an undeclared kind: %q", got)
	}
	if rpcByKind[rpcApplyTraced].version != traceVersion || rpcByKind[rpcApplyBatchTraced].version != traceVersion {
		t.Error("the traced kinds are not gated on traceVersion")
	}
}

// A kind the node does not serve is refused, over the transport, with
// the words every release has used (what a node of the previous release
// looks for) followed by a code the caller reads as refusalUnknownKind.
func TestUnknownKindRefusalTyped(t *testing.T) {
	tc := newTestCluster(t, 1, nil)
	n := tc.leader(10 * time.Second)
	caller, err := transport.New(transport.Config{BindAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { caller.Close() })
	ctx := ctxT(t, 10*time.Second)

	_, err = caller.Call(ctx, n.Addr(), []byte{200, 1, 2})
	if got := refusalOf(err); got != refusalUnknownKind {
		t.Fatalf("unknown kind: refusal %d (%v), want refusalUnknownKind", got, err)
	}
	// The text a previous release matches (strings.Contains unknownKind),
	// word for word.
	if want := "cluster: malformed rpc: unknown kind 200 (refusal code 3)"; !strings.HasSuffix(err.Error(), want) {
		t.Fatalf("refusal text %q, want it to end with %q", err, want)
	}

	_, err = caller.Call(ctx, n.Addr(), []byte{rpcWaiterClaim, 0xff})
	if got := refusalOf(err); got != refusalMalformed {
		t.Fatalf("malformed claim: refusal %d (%v), want refusalMalformed", got, err)
	}
	if _, err := caller.Call(ctx, n.Addr(), []byte{rpcNodeInfo}); err != nil || refusalOf(err) != refusalNone {
		t.Fatalf("node info: %v", err)
	}
}

// refusalOf reads this release's codes, a previous release's unknown
// kind by its words, and nothing into what is no peer's refusal.
func TestRefusalOf(t *testing.T) {
	remote := func(text string) error { return fmt.Errorf("%w: %s", transport.ErrRemote, text) }
	tests := []struct {
		name string
		err  error
		want refusalCode
	}{
		{"nil", nil, refusalNone},
		{"local error", errBadRPC, refusalNone},
		{"dial failure", errors.New("dial tcp: connection refused (refusal code 3)"), refusalNone},
		{"unknown kind, coded", remote(refuse(fmt.Errorf("%w %d", errUnknownKind, 9)).Error()), refusalUnknownKind},
		{"unknown kind, previous release", remote("cluster: malformed rpc: unknown kind 9"), refusalUnknownKind},
		{"not a member", remote(refuse(fmt.Errorf("%w: %q", errNotMember, "n9")).Error()), refusalNotMember},
		{"malformed", remote(refuse(errBadRPC).Error()), refusalMalformed},
		{"other, previous release", remote("cluster: malformed rpc"), refusalOther},
		{"code of a later release", remote("cluster: something new (refusal code 77)"), refusalOther},
		{"garbled code", remote("cluster: malformed rpc: unknown kind 9 (refusal code x)"), refusalUnknownKind},
		{"code out of range", remote("cluster: x (refusal code 4096)"), refusalOther},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := refusalOf(tt.err); got != tt.want {
				t.Fatalf("refusalOf(%v) = %d, want %d", tt.err, got, tt.want)
			}
		})
	}
	// The caller's end is not a refusal: it passes as is.
	if err := refuse(context.Canceled); err != context.Canceled {
		t.Fatalf("refuse(context.Canceled) = %v", err)
	}
	if err := refuse(fmt.Errorf("%w %d", errUnknownKind, 9)); !errors.Is(err, errBadRPC) || !errors.Is(err, errUnknownKind) {
		t.Fatalf("a refusal no longer unwraps: %v", err)
	}
}

// rpcKindDecl is one integer constant named rpc* in the package's
// non-test files: a peer RPC kind.
type rpcKindDecl struct{ file, name, value string }

// rpcKindDecls finds the package's peer RPC kind constants in its source.
func rpcKindDecls(t *testing.T) []rpcKindDecl {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var out []rpcKindDecl
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(token.NewFileSet(), f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(af, func(x ast.Node) bool {
			vs, ok := x.(*ast.ValueSpec)
			if !ok || len(vs.Names) != 1 || len(vs.Values) != 1 || !strings.HasPrefix(vs.Names[0].Name, "rpc") {
				return true
			}
			if lit, ok := vs.Values[0].(*ast.BasicLit); ok && lit.Kind == token.INT {
				out = append(out, rpcKindDecl{file: f, name: vs.Names[0].Name, value: lit.Value})
			}
			return true
		})
	}
	return out
}
