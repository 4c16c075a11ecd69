package cluster

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// maxMethods bounds the methods declared on one type of this package: a
// type past it holds several parts waiting to be named (docs/DESIGN.md
// "The node's parts").
const maxMethods = 45

// TestTypesStaySmall counts the methods declared on each type of the
// package and of lockservice (all build tags; promoted methods of
// embedded parts are the parts' own) and fails past maxMethods.
func TestTypesStaySmall(t *testing.T) {
	fset := token.NewFileSet()
	count := map[string]int{}
	for _, dir := range []string{".", "lockservice"} {
		countMethods(t, fset, dir, count)
	}
	if count["Node"] == 0 || count["raftReplica"] == 0 || count["lockservice.Service"] == 0 {
		t.Fatalf("counted no methods of Node, raftReplica or lockservice.Service: %v", count)
	}
	var big []string
	for typ, c := range count {
		if c > maxMethods {
			big = append(big, typ)
		}
	}
	sort.Strings(big)
	for _, typ := range big {
		t.Errorf("%s has %d methods, more than %d: split it into parts it composes", typ, count[typ], maxMethods)
	}
}

// countMethods adds the methods declared in dir's non-test files to
// count, by receiver type ("T" in ".", "dir.T" elsewhere).
func countMethods(t *testing.T, fset *token.FileSet, dir string, count map[string]int) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	prefix := ""
	if dir != "." {
		prefix = dir + "."
	}
	for _, e := range ents {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv == nil || len(fd.Recv.List) == 0 {
				continue
			}
			typ := fd.Recv.List[0].Type
			if s, ok := typ.(*ast.StarExpr); ok {
				typ = s.X
			}
			switch x := typ.(type) {
			case *ast.IndexExpr:
				typ = x.X
			case *ast.IndexListExpr:
				typ = x.X
			}
			if id, ok := typ.(*ast.Ident); ok {
				count[prefix+id.Name]++
			}
		}
	}
}
