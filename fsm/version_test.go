package fsm

import (
	"bytes"
	"errors"
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"math/bits"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestEveryOpHasAVersion fails when an op is added without the cluster
// version that introduced it (opVersion): such an op would be applied by
// new binaries and halt old ones with no gate in between.
func TestEveryOpHasAVersion(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	found := 0
	ctxt := build.Default
	if nextBuild {
		ctxt.BuildTags = append(ctxt.BuildTags, "locknode_next")
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		if ok, err := ctxt.MatchFile(".", f); err != nil || !ok {
			continue // not in this build
		}
		af, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range af.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			iotaOps := false
			for i, s := range g.Specs {
				vs := s.(*ast.ValueSpec)
				typ, _ := vs.Type.(*ast.Ident)
				if i == 0 && len(vs.Names) == 1 && vs.Names[0].Name == "OpInvalid" {
					iotaOps = true
				}
				var op int
				switch {
				case iotaOps:
					op = i
				case typ != nil && typ.Name == "Op" && len(vs.Values) == 1:
					lit, ok := vs.Values[0].(*ast.BasicLit)
					if !ok {
						t.Fatalf("%s: op %s: give it a literal value", f, vs.Names[0].Name)
					}
					if op, err = strconv.Atoi(lit.Value); err != nil {
						t.Fatal(err)
					}
				default:
					continue
				}
				name := vs.Names[0].Name
				if name == "OpInvalid" {
					continue
				}
				found++
				if v, ok := OpVersion(Op(op)); !ok {
					t.Errorf("%s (op %d) has no cluster version in opVersion (version.go): list it with the version that introduces it, and gate it (docs/DESIGN.md)", name, op)
				} else if v > MaxClusterVersion {
					t.Errorf("%s: version %d above this binary's %d", name, v, MaxClusterVersion)
				}
			}
		}
	}
	if found < int(OpSetVersion) {
		t.Fatalf("found %d ops, want at least %d", found, OpSetVersion)
	}
}

// TestEveryFieldHasAVersion fails when a command field (a mask bit) is
// added without the cluster version that introduced it.
func TestEveryFieldHasAVersion(t *testing.T) {
	if n := bits.OnesCount64(fAll); n != len(fieldVersion) {
		t.Fatalf("%d command fields, %d in fieldVersion (version.go): list every field with the version that introduces it", n, len(fieldVersion))
	}
	for i, v := range fieldVersion {
		if v == 0 || v > MaxClusterVersion {
			t.Errorf("field %d: version %d", i, v)
		}
	}
}

// TestHaltOnUnknownEntry: an op, field or command format unknown to this
// binary stops the table with ErrNeedVersion; nothing changes, and no
// later entry is applied.
func TestHaltOnUnknownEntry(t *testing.T) {
	good := (&Command{Op: OpAcquire, Key: "k", Owner: "o", TTL: 1000, Time: 10}).AppendBinary(nil)
	for name, b := range map[string][]byte{
		"op":     {1, 240, 0},
		"field":  {1, byte(OpTick), 0x80, 0x80, 0x80, 0x80, 0x10},
		"format": append([]byte{cmdVersion + 1}, good[1:]...),
	} {
		t.Run(name, func(t *testing.T) {
			tab := New(Config{})
			if r := tab.ApplyBytes(1, good); r.Err != nil {
				t.Fatal(r.Err)
			}
			before := snap(t, tab)
			r := tab.ApplyBytes(2, b)
			if !errors.Is(r.Err, ErrNeedVersion) {
				t.Fatalf("got %v, want ErrNeedVersion", r.Err)
			}
			if r := tab.ApplyBytes(3, good); !errors.Is(r.Err, ErrNeedVersion) || tab.Halted() == nil {
				t.Fatalf("the entry after: %v", r.Err)
			}
			if tab.AppliedIndex() != 1 || !bytes.Equal(before, snap(t, tab)) {
				t.Fatalf("a halted table changed: applied %d", tab.AppliedIndex())
			}
		})
	}
}

// TestSetVersion: the version rises by an entry, never falls, and an
// activation above this binary's range halts it naming the version.
func TestSetVersion(t *testing.T) {
	tab := New(Config{})
	if tab.Version() != 1 {
		t.Fatalf("new table at %d", tab.Version())
	}
	for i, v := range []uint64{0, 1, MaxClusterVersion, 1} {
		r := tab.Apply(uint64(i+1), &Command{Op: OpSetVersion, Token: v})
		if r.Err != nil || tab.Version() != MaxClusterVersion && v == MaxClusterVersion {
			t.Fatalf("set %d: %v, at %d", v, r.Err, tab.Version())
		}
	}
	if tab.Version() != MaxClusterVersion {
		t.Fatalf("lowered to %d", tab.Version())
	}
	r := tab.Apply(10, &Command{Op: OpSetVersion, Token: MaxClusterVersion + 1})
	var ve *VersionError
	if !errors.As(r.Err, &ve) || ve.Need != MaxClusterVersion+1 ||
		!strings.Contains(r.Err.Error(), "cluster version "+strconv.Itoa(MaxClusterVersion+1)) {
		t.Fatalf("activation above the range: %v", r.Err)
	}
	if tab.Version() != MaxClusterVersion || tab.AppliedIndex() != 4 {
		t.Fatalf("after the refused activation: version %d, applied %d", tab.Version(), tab.AppliedIndex())
	}
	// The version survives a snapshot.
	n := New(Config{})
	if err := n.Restore(bytes.NewReader(snap(t, tab))); err != nil || n.Version() != MaxClusterVersion {
		t.Fatalf("restored: %v, version %d", err, n.Version())
	}
}

// TestRestoreNewerSnapshot: a snapshot of a format or cluster version
// newer than this binary's is refused, naming the version it needs, and
// the table is unchanged.
func TestRestoreNewerSnapshot(t *testing.T) {
	tab := New(Config{})
	tab.Apply(1, &Command{Op: OpAcquire, Key: "k", Owner: "o", TTL: 1000, Time: 10})
	good := snap(t, tab)
	before := good
	for name, b := range map[string][]byte{
		"format":  append([]byte{maxSnapFormat + 1, MaxClusterVersion + 1}, good[2:]...),
		"version": append([]byte{good[0], MaxClusterVersion + 1}, good[2:]...),
	} {
		err := tab.Restore(bytes.NewReader(b))
		want := "cluster version " + strconv.Itoa(MaxClusterVersion+1)
		if !errors.Is(err, ErrNeedVersion) || !errors.Is(err, ErrBadVersion) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want ErrNeedVersion naming %q", name, err, want)
		}
		if !bytes.Equal(before, snap(t, tab)) {
			t.Errorf("%s: the table changed", name)
		}
	}
}
