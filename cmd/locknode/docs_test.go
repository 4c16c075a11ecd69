package main

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// The user documentation: README.md (a short front page) and one file a
// topic under docs/. These tests keep it navigable and true to the
// binary.

// repoRoot is deploy_test.go's: the repository, from this package.

// readmeMaxLines bounds the front page: details belong in docs/.
const readmeMaxLines = 400

// userDocs returns README.md and every docs/*.md, by path from the
// repository root.
func userDocs(t *testing.T) map[string]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, filepath.Join(repoRoot, "README.md"))
	docs := map[string]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(repoRoot, f)
		docs[filepath.ToSlash(rel)] = string(b)
	}
	if len(docs) < 2 {
		t.Fatalf("found only %v", docs)
	}
	return docs
}

func TestReadmeIsShort(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n > readmeMaxLines {
		t.Errorf("README.md has %d lines, more than %d: move detail into a docs/<topic>.md", n, readmeMaxLines)
	}
	// The first two commands a newcomer types.
	for _, want := range []string{"make run", "make test"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("README.md does not mention %q", want)
		}
	}
}

var (
	mdLink      = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	mdHeading   = regexp.MustCompile(`(?m)^#{1,6} +(.+?) *$`)
	mdCodeBlock = regexp.MustCompile("(?s)```.*?```")
	slugDrop    = regexp.MustCompile(`[^\p{L}\p{N} _-]`)
)

// anchorOf is GitHub's anchor for a heading: lower case, punctuation
// dropped, spaces as dashes.
func anchorOf(heading string) string {
	h := strings.ToLower(strings.ReplaceAll(heading, "`", ""))
	return strings.ReplaceAll(slugDrop.ReplaceAllString(h, ""), " ", "-")
}

func anchorsOf(doc string) map[string]bool {
	a := map[string]bool{}
	for _, m := range mdHeading.FindAllStringSubmatch(mdCodeBlock.ReplaceAllString(doc, ""), -1) {
		a[anchorOf(m[1])] = true
	}
	return a
}

// Every relative link of README.md and docs/ names a file of the
// repository, and an anchor into a Markdown file names one of its
// headings.
func TestDocsLinksResolve(t *testing.T) {
	docs := userDocs(t)
	checked := 0
	for name, doc := range docs {
		for _, m := range mdLink.FindAllStringSubmatch(mdCodeBlock.ReplaceAllString(doc, ""), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			path := name // a bare #anchor points into the same file
			if file != "" {
				path = filepath.ToSlash(filepath.Join(filepath.Dir(name), file))
			}
			checked++
			if _, err := os.Stat(filepath.Join(repoRoot, path)); err != nil {
				t.Errorf("%s: link %q: %s does not exist", name, target, path)
				continue
			}
			if anchor == "" || !strings.HasSuffix(path, ".md") {
				continue
			}
			body, ok := docs[path]
			if !ok {
				b, err := os.ReadFile(filepath.Join(repoRoot, path))
				if err != nil {
					t.Fatal(err)
				}
				body = string(b)
			}
			if !anchorsOf(body)[anchor] {
				t.Errorf("%s: link %q: %s has no heading for #%s", name, target, path, anchor)
			}
		}
	}
	if checked < 20 {
		t.Fatalf("only %d relative links found: the link pattern is broken", checked)
	}
}

func TestAnchorOf(t *testing.T) {
	for in, want := range map[string]string{
		"A full or failing disk":              "a-full-or-failing-disk",
		"Who holds a lock, since when":        "who-holds-a-lock-since-when",
		"Acquire: modes, permits, waiting":    "acquire-modes-permits-waiting",
		"Guarantees, in plain words":          "guarantees-in-plain-words",
		"`locknode dev` and `locknode serve`": "locknode-dev-and-locknode-serve",
	} {
		if got := anchorOf(in); got != want {
			t.Errorf("anchorOf(%q) = %q, want %q", in, got, want)
		}
	}
}

// Every flag of `locknode serve` and `locknode dev`, and the environment
// variable of every serve flag, is documented in docs/ (the
// configuration table, the limits tables, the security page), and every
// command is in the command-line page.
func TestDocsCoverFlagsAndCommands(t *testing.T) {
	docs := userDocs(t)
	var all strings.Builder
	for _, d := range docs {
		all.WriteString(d)
	}
	text := all.String()
	root := newRoot(io.Discard, io.Discard)
	find := func(name string) *cobra.Command {
		for _, c := range root.Commands() {
			if c.Name() == name {
				return c
			}
		}
		t.Fatalf("no command %q", name)
		return nil
	}
	for _, name := range []string{"serve", "dev"} {
		find(name).Flags().VisitAll(func(f *pflag.Flag) {
			if f.Name == "help" {
				return
			}
			if !strings.Contains(text, "`--"+f.Name) && !strings.Contains(text, ", --"+f.Name) {
				t.Errorf("locknode %s --%s is not documented in README.md or docs/", name, f.Name)
			}
			if name != "serve" {
				return
			}
			env := "LOCKNODE_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
			if !strings.Contains(text, env) {
				t.Errorf("locknode serve --%s: its variable %s is not documented", f.Name, env)
			}
		})
	}
	cli := docs["docs/cli.md"]
	for _, c := range root.Commands() {
		// Tests register commands of their own, named *-test
		// (cli_test.go), when they run before this one.
		if c.Hidden || c.Name() == "help" || strings.HasSuffix(c.Name(), "-test") {
			continue
		}
		if !strings.Contains(cli, "`locknode "+c.Name()) {
			t.Errorf("docs/cli.md does not list `locknode %s`", c.Name())
		}
	}
}

// The README's tour runs as written against `locknode dev`: with the
// addresses it printed put in H and R, the shell block gives the fence
// of the first grant, a larger one to the waiter, and the fence registry
// admits the new holder and refuses the old one.
func TestReadmeTourRuns(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	start := strings.Index(readme, "## A 60-second tour")
	if start < 0 {
		t.Fatal("README.md has no tour")
	}
	block := mdCodeBlock.FindString(readme[start:])
	script := strings.TrimSuffix(strings.SplitN(block, "\n", 2)[1], "```")
	if !regexp.MustCompile(`(?m)^H=`).MatchString(script) || !regexp.MustCompile(`(?m)^R=`).MatchString(script) {
		t.Fatalf("the tour's first block does not set H and R:\n%s", script)
	}
	sh := program(t, "sh")
	program(t, "curl")
	program(t, "redis-cli")
	lines, stop := startDev(t, "--nodes", "3")
	defer stop()
	// A follower's HTTP and another node's RESP, as a newcomer might pick.
	h, r := lines[1][2], lines[2][3]
	_, rport, _ := strings.Cut(r, ":")
	var out []string
	for _, l := range strings.Split(script, "\n") {
		switch {
		case strings.HasPrefix(l, "H="):
			l = "H=" + h
		case strings.HasPrefix(l, "R="):
			l = "R=" + rport
		}
		out = append(out, l)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, sh, "-e", "-c", strings.Join(out, "\n"))
	cmd.Dir = t.TempDir()
	got, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the tour failed: %v\n%s", err, got)
	}
	text := string(got)
	sc := bufio.NewScanner(strings.NewReader(text))
	var f1, f2 uint64
	fences := regexp.MustCompile(`^worker-1 had fence (\d+), worker-2 has (\d+)$`)
	for sc.Scan() {
		if m := fences.FindStringSubmatch(sc.Text()); m != nil {
			f1, _ = strconv.ParseUint(m[1], 10, 64)
			f2, _ = strconv.ParseUint(m[2], 10, 64)
		}
	}
	if f1 == 0 || f2 <= f1 {
		t.Fatalf("fences %d then %d: the waiter's must be larger\n%s", f1, f2, text)
	}
	for _, want := range []string{
		`"code":"locked"`, // /try while worker-1 holds it
		"worker-1\n",      // redis-cli GET
		`{"ok":true,"highest":` + strconv.FormatUint(f2, 10) + `}`,
		`{"ok":false,"highest":` + strconv.FormatUint(f2, 10) + `}`,
		"locknode_grants_total ",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the tour's output lacks %q:\n%s", want, text)
		}
	}
}
