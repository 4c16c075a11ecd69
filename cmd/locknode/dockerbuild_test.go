package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	pathpkg "path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The Dockerfile's build stage, run without a container engine (so that a
// machine without one checks it too): its COPY
// lines copy from a clean copy of the build context (the files a clean
// checkout has, less .dockerignore) into a fresh directory standing for
// the image's file system, and its RUN lines run there in order, with
// the module cache of this machine and no network. A COPY that leaves
// out something a later RUN needs (go.mod's replace of raft by
// ./third_party/raft before "go mod download") fails here as it fails in
// "docker build".

// dockerInstr is one instruction of a Dockerfile.
type dockerInstr struct {
	line int
	cmd  string // upper case: FROM, RUN, COPY, ...
	args string
}

// parseDockerfile splits a Dockerfile into instructions, joining
// continuation lines and dropping comments.
func parseDockerfile(text string) []dockerInstr {
	var out []dockerInstr
	var cur strings.Builder
	start := 0
	for i, l := range strings.Split(text, "\n") {
		t := strings.TrimSpace(l)
		if cur.Len() == 0 && (t == "" || strings.HasPrefix(t, "#")) {
			continue
		}
		if cur.Len() > 0 && strings.HasPrefix(t, "#") {
			continue // a comment inside a continued instruction
		}
		if cur.Len() == 0 {
			start = i + 1
		}
		if s, ok := strings.CutSuffix(t, "\\"); ok {
			cur.WriteString(s + " ")
			continue
		}
		cur.WriteString(t)
		cmd, args, _ := strings.Cut(cur.String(), " ")
		out = append(out, dockerInstr{start, strings.ToUpper(cmd), strings.TrimSpace(args)})
		cur.Reset()
	}
	return out
}

// dockerIgnore is a parsed .dockerignore: patterns rooted at the context,
// "**" for any number of directories, "!" re-including; the last match
// wins and a directory's pattern covers what is under it.
type dockerIgnore []struct {
	re     *regexp.Regexp
	negate bool
}

func parseDockerIgnore(text string) dockerIgnore {
	var out dockerIgnore
	for _, l := range strings.Split(text, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		neg := strings.HasPrefix(l, "!")
		l = pathpkg.Clean(strings.TrimPrefix(strings.TrimPrefix(l, "!"), "/"))
		var re strings.Builder
		re.WriteString("^")
		for i := 0; i < len(l); i++ {
			switch {
			case strings.HasPrefix(l[i:], "**/"):
				re.WriteString("(.*/)?")
				i += 2
			case strings.HasPrefix(l[i:], "**"):
				re.WriteString(".*")
				i++
			case l[i] == '*':
				re.WriteString("[^/]*")
			case l[i] == '?':
				re.WriteString("[^/]")
			default:
				re.WriteString(regexp.QuoteMeta(l[i : i+1]))
			}
		}
		re.WriteString("(/.*)?$")
		out = append(out, struct {
			re     *regexp.Regexp
			negate bool
		}{regexp.MustCompile(re.String()), neg})
	}
	return out
}

func (d dockerIgnore) excludes(rel string) bool {
	ex := false
	for _, p := range d {
		if p.re.MatchString(rel) {
			ex = !p.negate
		}
	}
	return ex
}

// buildContext lists the files (slash paths relative to root) of a clean
// checkout: what git tracks or would track (new files, not ignored ones),
// or every file when root is no git work tree.
func buildContext(t *testing.T, root string) []string {
	t.Helper()
	var files []string
	out, err := exec.Command("git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard").Output()
	if err == nil {
		for _, f := range strings.Split(string(out), "\x00") {
			if f == "" {
				continue
			}
			if fi, err := os.Lstat(filepath.Join(root, f)); err == nil && fi.Mode().IsRegular() {
				files = append(files, f)
			}
		}
		return files
	}
	t.Logf("no git work tree (%v): the context is every file under %s", err, root)
	err = filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil || !e.Type().IsRegular() {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		files = append(files, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		t.Fatal(err)
	}
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, fi.Mode().Perm())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestDockerIgnore: the build context leaves out build outputs and
// version control, and keeps every source the build needs.
func TestDockerIgnore(t *testing.T) {
	ig := parseDockerIgnore(string(readRepoFile(t, ".dockerignore")))
	for _, p := range []string{".git/HEAD", "bin/locknode", "locknode", "cmd/locknode/locknode.test", "backup.snap", "a/b/cpu.prof"} {
		if !ig.excludes(p) {
			t.Errorf(".dockerignore lets %s into the build context", p)
		}
	}
	for _, p := range []string{"go.mod", "go.sum", "third_party/raft/go.mod", "cmd/locknode/main.go", "ui/assets/index.html", "fsm/luaengine/luatest/error_scripts.txt"} {
		if ig.excludes(p) {
			t.Errorf(".dockerignore leaves %s out of the build context", p)
		}
	}
}

// TestDockerfileBuildStage runs the Dockerfile's first stage (see the top
// of this file) and checks that it produces a locknode binary.
func TestDockerfileBuildStage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds locknode")
	}
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	instrs := parseDockerfile(string(readRepoFile(t, "Dockerfile")))
	if len(instrs) == 0 || instrs[0].cmd != "FROM" {
		t.Fatalf("the Dockerfile does not begin with FROM: %+v", instrs)
	}
	// The image's Go must be at least go.mod's.
	if m := regexp.MustCompile(`golang:(\d+\.\d+)`).FindStringSubmatch(instrs[0].args); m == nil {
		t.Errorf("build stage %q: not a golang image", instrs[0].args)
	} else if gm := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindStringSubmatch(string(readRepoFile(t, "go.mod"))); gm == nil || versionLess(m[1], gm[1]) {
		t.Errorf("build stage golang:%s is older than go.mod's go %v", m[1], gm)
	}
	ig := parseDockerIgnore(string(readRepoFile(t, ".dockerignore")))
	var ctxFiles []string
	for _, f := range buildContext(t, root) {
		if !ig.excludes(f) {
			ctxFiles = append(ctxFiles, f)
		}
	}

	goExe, err := exec.LookPath("go")
	if err != nil {
		if os.Getenv("LOCKNODE_CI") == "1" {
			t.Fatal("go is not on PATH (LOCKNODE_CI=1)")
		}
		t.Skip("go is not on PATH")
	}
	img := t.TempDir() // the image's file system
	env := []string{
		"PATH=" + filepath.Dir(goExe) + string(os.PathListSeparator) + os.Getenv("PATH"),
		"HOME=" + os.Getenv("HOME"),
		"GOMODCACHE=" + goEnv(t, goExe, "GOMODCACHE"),
		"GOCACHE=" + goEnv(t, goExe, "GOCACHE"),
		// Only the modules this machine has: no network.
		"GOPROXY=off", "GOSUMDB=off", "GOTOOLCHAIN=local", "GOWORK=off", "GOFLAGS=",
	}
	rooted := regexp.MustCompile(`(^|[\s="'])/([A-Za-z0-9_.-])`)
	workdir := img
	ran := map[string]bool{}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for _, in := range instrs[1:] {
		if in.cmd == "FROM" {
			break // the next stage
		}
		switch in.cmd {
		case "WORKDIR":
			workdir = filepath.Join(img, filepath.FromSlash(in.args))
			if err := os.MkdirAll(workdir, 0o755); err != nil {
				t.Fatal(err)
			}
		case "ARG", "ENV":
			for _, kv := range strings.Fields(in.args) {
				if k, v, ok := strings.Cut(kv, "="); ok {
					env = append(env, k+"="+strings.Trim(v, `"`))
				}
			}
		case "COPY":
			args := strings.Fields(in.args)
			for len(args) > 0 && strings.HasPrefix(args[0], "--") {
				if strings.HasPrefix(args[0], "--from") {
					t.Fatalf("line %d: COPY --from in the build stage", in.line)
				}
				args = args[1:]
			}
			if len(args) < 2 {
				t.Fatalf("line %d: COPY %s", in.line, in.args)
			}
			srcs, dst := args[:len(args)-1], args[len(args)-1]
			dstDir := filepath.Join(workdir, filepath.FromSlash(dst))
			if pathpkg.IsAbs(dst) {
				dstDir = filepath.Join(img, filepath.FromSlash(dst))
			}
			for _, src := range srcs {
				src = pathpkg.Clean(src)
				n := 0
				for _, f := range ctxFiles {
					var rel string
					switch {
					case src == ".":
						rel = f
					case f == src:
						rel = pathpkg.Base(f) // a file into the directory dst
					case strings.HasPrefix(f, src+"/"):
						rel = strings.TrimPrefix(f, src+"/") // a directory's contents
					default:
						continue
					}
					copyFile(t, filepath.Join(root, filepath.FromSlash(f)), filepath.Join(dstDir, filepath.FromSlash(rel)))
					n++
				}
				if n == 0 {
					t.Fatalf("line %d: COPY %s: nothing in the build context (after .dockerignore)", in.line, src)
				}
			}
		case "RUN":
			script := rooted.ReplaceAllString(in.args, "${1}"+img+"/${2}")
			fields := strings.Fields(in.args)
			cmd := exec.CommandContext(ctx, "sh", "-ec", script)
			cmd.Dir, cmd.Env = workdir, env
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			start := time.Now()
			err := cmd.Run()
			t.Logf("line %d: RUN %s (%v)", in.line, in.args, time.Since(start).Round(time.Millisecond))
			if err != nil {
				if offline(out.String()) && os.Getenv("LOCKNODE_CI") != "1" {
					t.Skipf("line %d: RUN %s needs modules this machine does not have and no network to fetch them:\n%s", in.line, in.args, out.String())
				}
				t.Fatalf("line %d: RUN %s: %v\n%s", in.line, in.args, err, out.String())
			}
			for _, f := range fields {
				ran[f] = true
			}
		default:
			t.Fatalf("line %d: %s in the build stage is not simulated here", in.line, in.cmd)
		}
	}
	if !ran["download"] || !ran["build"] {
		t.Fatalf("the build stage runs no go mod download or go build: %v", ran)
	}
	bin := filepath.Join(img, "out", "locknode")
	out, err := exec.CommandContext(ctx, bin, "version").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "dev") {
		t.Fatalf("%s version: %v %s", bin, err, out)
	}
	// The runtime stage copies exactly that file.
	if !strings.Contains(string(readRepoFile(t, "Dockerfile")), "COPY --from=build /out/locknode /usr/local/bin/locknode") {
		t.Error("the runtime stage does not copy /out/locknode from the build stage")
	}
}

// offline reports whether go failed for want of the network.
func offline(out string) bool {
	return strings.Contains(out, "GOPROXY=off") || strings.Contains(out, "module lookup disabled")
}

func goEnv(t *testing.T, goExe, name string) string {
	t.Helper()
	out, err := exec.Command(goExe, "env", name).Output()
	if err != nil {
		t.Fatalf("go env %s: %v", name, err)
	}
	return strings.TrimSpace(string(out))
}

// versionLess compares dotted versions numerically ("1.9" < "1.26").
func versionLess(a, b string) bool {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(as) && i < len(bs); i++ {
		var x, y int
		fmt.Sscan(as[i], &x)
		fmt.Sscan(bs[i], &y)
		if x != y {
			return x < y
		}
	}
	return len(as) < len(bs)
}
