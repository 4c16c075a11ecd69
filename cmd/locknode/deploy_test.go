package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/locknode/locknode/auth"
	"github.com/locknode/locknode/fsm"
	"github.com/locknode/locknode/internal/tlsutil"
)

// The packaging files configure "locknode serve" with flags and LOCKNODE_*
// variables; a renamed flag must not leave them silently ignored.

var repoRoot = filepath.Join("..", "..")

// serveHelp is "locknode serve -h".
func serveHelp(t *testing.T) string {
	t.Helper()
	var out syncBuffer
	if code := runServe(context.Background(), []string{"-h"}, &out, io.Discard); code != 0 {
		t.Fatalf("serve -h: %d", code)
	}
	return out.String()
}

// checkSetting fails unless the flag ("--log-format") or variable
// ("LOCKNODE_LOG_FORMAT", the flag's name in upper case with _ for -)
// is one of serve's flags.
func checkSetting(t *testing.T, help, where, s string) {
	t.Helper()
	name := strings.TrimLeft(s, "-")
	if v, ok := strings.CutPrefix(s, "LOCKNODE_"); ok {
		name = strings.ReplaceAll(strings.ToLower(v), "_", "-")
	}
	if !regexp.MustCompile(`(?m)^\s+--` + regexp.QuoteMeta(name) + `\b`).MatchString(help) {
		t.Errorf("%s: %s is not a flag of locknode serve", where, s)
	}
}

func readRepoFile(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestComposeFileUsesServeSettings(t *testing.T) {
	help := serveHelp(t)
	compose := readCompose(t)
	if len(compose.Services) != 3 {
		t.Fatalf("%d services, want 3", len(compose.Services))
	}
	for name, svc := range compose.Services {
		if svc.Environment["LOCKNODE_ID"] != name || svc.Environment["LOCKNODE_PEERS"] == "" || len(svc.Volumes) == 0 {
			t.Errorf("service %s: id %q, peers %q, volumes %v", name, svc.Environment["LOCKNODE_ID"], svc.Environment["LOCKNODE_PEERS"], svc.Volumes)
		}
		if !strings.Contains(svc.Environment["LOCKNODE_PEERS"], name+"="+name+":7000") {
			t.Errorf("service %s is not in its own peers", name)
		}
		for k := range svc.Environment {
			checkSetting(t, help, "docker-compose.yml "+name, k)
		}
		// Published only on this host, deliberately: beyond it only
		// behind TLS.
		for _, p := range svc.Ports {
			if !strings.HasPrefix(p, "127.0.0.1:") {
				t.Errorf("service %s publishes %s beyond loopback", name, p)
			}
		}
		// A users file, mounted read-only from a file that must exist.
		users := svc.Environment["LOCKNODE_USERS"]
		mounted := false
		for _, v := range svc.Volumes {
			m, ok := v.(map[string]any)
			if !ok || m["target"] != users {
				continue
			}
			bind, _ := m["bind"].(map[string]any)
			mounted = m["type"] == "bind" && m["read_only"] == true && bind["create_host_path"] == false
			if src, _ := m["source"].(string); src != "./deploy/users.acl" {
				t.Errorf("service %s: users file from %v, want ./deploy/users.acl (made from deploy/users.acl.example)", name, m["source"])
			}
		}
		if users == "" || !mounted {
			t.Errorf("service %s: no users file (LOCKNODE_USERS %q) mounted read-only from an existing file: %v", name, users, svc.Volumes)
		}
		if checkPeerRule(t, "docker-compose.yml "+name, "docker-compose.yml", svc.Environment, nil) {
			for _, p := range svc.Ports {
				if p == "7000" || strings.HasSuffix(p, ":7000") || strings.Contains(p, ":7000/") {
					t.Errorf("service %s publishes its open peer port: %s", name, p)
				}
			}
		}
	}
}

func TestKubernetesExampleUsesServeSettings(t *testing.T) {
	help := serveHelp(t)
	dec := yaml.NewDecoder(strings.NewReader(string(readRepoFile(t, "deploy/kubernetes/statefulset.yaml"))))
	type probe struct {
		HTTPGet struct {
			Path string `yaml:"path"`
		} `yaml:"httpGet"`
	}
	found, openPeers := false, false
	var policies []networkPolicy
	for {
		var doc struct {
			Kind string `yaml:"kind"`
			Spec struct {
				Template struct {
					Spec struct {
						Containers []struct {
							Args []string `yaml:"args"`
							Env  []struct {
								Name  string `yaml:"name"`
								Value string `yaml:"value"`
							} `yaml:"env"`
							Liveness  probe `yaml:"livenessProbe"`
							Readiness probe `yaml:"readinessProbe"`
						} `yaml:"containers"`
					} `yaml:"spec"`
				} `yaml:"template"`
			} `yaml:"spec"`
		}
		var node yaml.Node
		err := dec.Decode(&node)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := node.Decode(&doc); err != nil {
			t.Fatal(err)
		}
		if doc.Kind == "NetworkPolicy" {
			var np networkPolicy
			if err := node.Decode(&np); err != nil {
				t.Fatal(err)
			}
			policies = append(policies, np)
		}
		if doc.Kind != "StatefulSet" {
			continue
		}
		found = true
		for _, c := range doc.Spec.Template.Spec.Containers {
			if c.Liveness.HTTPGet.Path != "/livez" || c.Readiness.HTTPGet.Path != "/readyz" {
				t.Errorf("probes %q and %q, want /livez and /readyz", c.Liveness.HTTPGet.Path, c.Readiness.HTTPGet.Path)
			}
			for _, a := range c.Args {
				if strings.HasPrefix(a, "-") {
					checkSetting(t, help, "statefulset args", a)
				}
			}
			env := map[string]string{}
			for _, e := range c.Env {
				if strings.HasPrefix(e.Name, "LOCKNODE_") {
					checkSetting(t, help, "statefulset env", e.Name)
					env[e.Name] = e.Value
				}
			}
			openPeers = checkPeerRule(t, "statefulset", "deploy/kubernetes/statefulset.yaml", env, c.Args) || openPeers
		}
	}
	if !found {
		t.Fatal("no StatefulSet in the example")
	}
	if openPeers && !peerPortFenced(policies) {
		t.Errorf("the peer port runs without TLS and no NetworkPolicy admits only locknode pods to it: %+v", policies)
	}
}

// networkPolicy is what TestKubernetesExampleUsesServeSettings reads of
// a NetworkPolicy.
type networkPolicy struct {
	Spec struct {
		PodSelector struct {
			MatchLabels map[string]string `yaml:"matchLabels"`
		} `yaml:"podSelector"`
		PolicyTypes []string `yaml:"policyTypes"`
		Ingress     []struct {
			From []struct {
				PodSelector *struct {
					MatchLabels map[string]string `yaml:"matchLabels"`
				} `yaml:"podSelector"`
			} `yaml:"from"`
			Ports []struct {
				Port any `yaml:"port"`
			} `yaml:"ports"`
		} `yaml:"ingress"`
	} `yaml:"spec"`
}

// peerPortFenced reports whether one of the policies selects the locknode
// pods and admits to port 7000 only locknode pods: every ingress rule
// that opens 7000 (a rule without ports opens every port) names its
// sources, and each is a locknode pod selector.
func peerPortFenced(policies []networkPolicy) bool {
	for _, np := range policies {
		if np.Spec.PodSelector.MatchLabels["app"] != "locknode" {
			continue
		}
		fenced := true
		for _, r := range np.Spec.Ingress {
			opens := len(r.Ports) == 0
			for _, p := range r.Ports {
				opens = opens || fmt.Sprint(p.Port) == "7000" || fmt.Sprint(p.Port) == "raft"
			}
			if !opens {
				continue
			}
			if len(r.From) == 0 {
				fenced = false
			}
			for _, f := range r.From {
				if f.PodSelector == nil || f.PodSelector.MatchLabels["app"] != "locknode" {
					fenced = false
				}
			}
		}
		if fenced {
			return true
		}
	}
	return false
}

var envName = regexp.MustCompile(`\bLOCKNODE_[A-Z_]+\b`)

func TestDockerfileAndSystemdUseServeSettings(t *testing.T) {
	help := serveHelp(t)
	dockerfile := string(readRepoFile(t, "Dockerfile"))
	for _, want := range []string{"CGO_ENABLED=0", "USER locknode", "VOLUME /data", "/readyz", `ENTRYPOINT ["/usr/local/bin/locknode", "serve"]`} {
		if !strings.Contains(dockerfile, want) {
			t.Errorf("Dockerfile lacks %s", want)
		}
	}
	for _, f := range []string{"Dockerfile", "deploy/locknode.env", "deploy/locknode.service"} {
		for _, v := range envName.FindAllString(string(readRepoFile(t, f)), -1) {
			checkSetting(t, help, f, v)
		}
	}
	unit := string(readRepoFile(t, "deploy/locknode.service"))
	if !strings.Contains(unit, "EnvironmentFile=/etc/locknode/locknode.env") {
		t.Error("the unit does not read its environment file")
	}
	checkPeerRule(t, "Dockerfile", "Dockerfile", envSettings(dockerfile), nil)
	checkPeerRule(t, "deploy/locknode.env", "deploy/locknode.env", envSettings(string(readRepoFile(t, "deploy/locknode.env"))), nil)
}

var envSetting = regexp.MustCompile(`(?m)^\s*(?:ENV\s+)?(LOCKNODE_[A-Z_]+)=(\S*)`)

// envSettings reads NAME=value settings of LOCKNODE_* variables from an
// environment file or a Dockerfile's ENV lines; comments are skipped.
func envSettings(text string) map[string]string {
	env := map[string]string{}
	for _, m := range envSetting.FindAllStringSubmatch(text, -1) {
		env[m[1]] = strings.TrimSuffix(m[2], "\\")
	}
	return env
}

// checkPeerRule fails unless serve would start with these settings
// (peerSecurity: peer TLS, or a peer port on loopback without users, or
// an explicit LOCKNODE_INSECURE_PEER / --insecure-peer, which the file
// must explain in a comment). It reports whether the peer port is open
// beyond loopback, for the caller to check what fences it.
func checkPeerRule(t *testing.T, where, file string, env map[string]string, args []string) bool {
	t.Helper()
	raft := env["LOCKNODE_RAFT_ADDR"]
	if raft == "" {
		raft = "127.0.0.1:7000" // serve's default
	}
	peerTLS := env["LOCKNODE_PEER_TLS_CERT"] != "" && env["LOCKNODE_PEER_TLS_KEY"] != "" && env["LOCKNODE_PEER_TLS_CA"] != ""
	insecure, _ := strconv.ParseBool(env["LOCKNODE_INSECURE_PEER"])
	for _, a := range args {
		insecure = insecure || a == "--insecure-peer" || a == "--insecure-peer=true"
	}
	if _, err := peerSecurity(raft, peerTLS, env["LOCKNODE_USERS"] != "", insecure); err != nil {
		t.Errorf("%s: serve would not start: %v", where, err)
		return false
	}
	if !insecure {
		return false
	}
	said := false
	for _, l := range strings.Split(string(readRepoFile(t, file)), "\n") {
		l = strings.TrimSpace(l)
		said = said || strings.HasPrefix(l, "#") && strings.Contains(l, "without TLS")
	}
	if !said {
		t.Errorf("%s: the peer port is left open without a comment saying why", where)
	}
	return beyondLoopback(raft)
}

// systemd-analyze checks the unit's syntax; it warns (on stderr) about
// unknown keys without failing, so any output fails the test.
func TestSystemdUnitVerifies(t *testing.T) {
	sa, err := exec.LookPath("systemd-analyze")
	if err != nil {
		if os.Getenv("LOCKNODE_CI") == "1" {
			t.Fatal("systemd-analyze not installed (LOCKNODE_CI=1)")
		}
		t.Skip("systemd-analyze not installed")
	}
	envFile, err := filepath.Abs(filepath.Join(repoRoot, "deploy", "locknode.env"))
	if err != nil {
		t.Fatal(err)
	}
	// The binary and the environment file are not installed here.
	unit := strings.NewReplacer("/usr/local/bin/locknode", "/bin/true", "/etc/locknode/locknode.env", envFile).
		Replace(string(readRepoFile(t, "deploy/locknode.service")))
	path := filepath.Join(t.TempDir(), "locknode.service")
	if err := os.WriteFile(path, []byte(unit), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(sa, "verify", path).CombinedOutput()
	if err != nil || len(out) > 0 {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
}

// k8sDocs decodes every document of the Kubernetes example, by kind.
func k8sDocs(t *testing.T) map[string][]map[string]any {
	t.Helper()
	dec := yaml.NewDecoder(strings.NewReader(string(readRepoFile(t, "deploy/kubernetes/statefulset.yaml"))))
	out := map[string][]map[string]any{}
	for {
		var doc map[string]any
		err := dec.Decode(&doc)
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		kind, _ := doc["kind"].(string)
		out[kind] = append(out[kind], doc)
	}
}

// dig follows keys (string: a map key; int: a list index) through a
// decoded YAML document; nil when a step is missing.
func dig(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			v = m[k]
		case int:
			l, ok := v.([]any)
			if !ok || k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

// k8sQuantity reads a Kubernetes memory quantity (1536Mi, 1.5Gi, 2G).
func k8sQuantity(t *testing.T, q string) float64 {
	t.Helper()
	units := []struct {
		suffix string
		mult   float64
	}{{"Ki", 1 << 10}, {"Mi", 1 << 20}, {"Gi", 1 << 30}, {"Ti", 1 << 40}, {"k", 1e3}, {"M", 1e6}, {"G", 1e9}, {"T", 1e12}}
	for _, u := range units {
		if n, ok := strings.CutSuffix(q, u.suffix); ok {
			v, err := strconv.ParseFloat(n, 64)
			if err != nil {
				t.Fatalf("quantity %q: %v", q, err)
			}
			return v * u.mult
		}
	}
	v, err := strconv.ParseFloat(q, 64)
	if err != nil {
		t.Fatalf("quantity %q: %v", q, err)
	}
	return v
}

// TestKubernetesExampleResilient: the StatefulSet leaves memory headroom
// over the key space's limit, spreads its pods over machines, a
// PodDisruptionBudget lets voluntary disruptions take one pod at a time,
// and every request authenticates against a users file from a Secret.
func TestKubernetesExampleResilient(t *testing.T) {
	docs := k8sDocs(t)
	if len(docs["StatefulSet"]) != 1 {
		t.Fatalf("%d StatefulSets, want 1", len(docs["StatefulSet"]))
	}
	sts := docs["StatefulSet"][0]
	pod := dig(sts, "spec", "template", "spec")
	c := dig(pod, "containers", 0)
	env := map[string]string{}
	envs, _ := dig(c, "env").([]any)
	for _, e := range envs {
		n, _ := dig(e, "name").(string)
		v, _ := dig(e, "value").(string)
		env[n] = v
	}

	// Memory: the limit at least half as much again as --max-memory.
	maxMem := fsm.DefaultConfig().MaxMemory
	if v := env["LOCKNODE_MAX_MEMORY"]; v != "" {
		var err error
		if maxMem, err = parseMaxMemory(v); err != nil || maxMem <= 0 {
			t.Fatalf("LOCKNODE_MAX_MEMORY %q: %d %v", v, maxMem, err)
		}
	}
	limit, _ := dig(c, "resources", "limits", "memory").(string)
	if limit == "" {
		t.Fatal("no memory limit")
	}
	if l := k8sQuantity(t, limit); l < 1.5*float64(maxMem) {
		t.Errorf("memory limit %s is less than 1.5 x --max-memory (%d MiB): no headroom for the runtime, the log cache and snapshots", limit, maxMem>>20)
	}
	if req, _ := dig(c, "resources", "requests", "memory").(string); req == "" || k8sQuantity(t, req) < k8sQuantity(t, limit) {
		t.Errorf("memory request %q below the limit %s: the node may be evicted for using what it may use", req, limit)
	}

	// Anti-affinity: no two pods on one machine.
	spread := false
	for _, kind := range []string{"requiredDuringSchedulingIgnoredDuringExecution", "preferredDuringSchedulingIgnoredDuringExecution"} {
		terms, _ := dig(pod, "affinity", "podAntiAffinity", kind).([]any)
		for _, term := range terms {
			if kind[0] == 'p' {
				term = dig(term, "podAffinityTerm")
			}
			if dig(term, "topologyKey") == "kubernetes.io/hostname" && dig(term, "labelSelector", "matchLabels", "app") == "locknode" {
				spread = true
			}
		}
	}
	if !spread {
		t.Errorf("no pod anti-affinity on kubernetes.io/hostname for app=locknode: %v", dig(pod, "affinity"))
	}

	// A PodDisruptionBudget of one pod.
	pdbOK := false
	for _, pdb := range docs["PodDisruptionBudget"] {
		if dig(pdb, "spec", "maxUnavailable") == 1 && dig(pdb, "spec", "selector", "matchLabels", "app") == "locknode" {
			pdbOK = true
		}
	}
	if !pdbOK {
		t.Errorf("no PodDisruptionBudget with maxUnavailable 1 for app=locknode: %v", docs["PodDisruptionBudget"])
	}

	// The users file, from a Secret mounted where LOCKNODE_USERS points.
	users := env["LOCKNODE_USERS"]
	if users == "" {
		t.Fatal("no LOCKNODE_USERS: every client could force-release every lock")
	}
	secretVols := map[string]bool{}
	vols, _ := dig(pod, "volumes").([]any)
	for _, v := range vols {
		if s, _ := dig(v, "secret", "secretName").(string); s != "" {
			secretVols[dig(v, "name").(string)] = true
		}
	}
	mounted := false
	mounts, _ := dig(c, "volumeMounts").([]any)
	for _, m := range mounts {
		p, _ := dig(m, "mountPath").(string)
		n, _ := dig(m, "name").(string)
		if secretVols[n] && dig(m, "readOnly") == true && strings.HasPrefix(users, strings.TrimSuffix(p, "/")+"/") {
			mounted = true
		}
	}
	if !mounted {
		t.Errorf("LOCKNODE_USERS=%s is not in a Secret mounted read-only", users)
	}
}

// TestUsersExampleParses: the users file the deploy examples start from
// is valid, and admits nobody until its passwords are set.
func TestUsersExampleParses(t *testing.T) {
	us, err := auth.ParseFile(filepath.Join(repoRoot, "deploy", "users.acl.example"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(readRepoFile(t, "deploy/users.acl.example"))
	if strings.Contains(text, " >") || strings.Contains(text, "nopass") {
		t.Error("the example has a clear-text or no password: a copy left unedited would admit anyone who reads it")
	}
	if us.Lookup("admin") == nil || us.Anonymous() != nil {
		t.Errorf("users %v, anonymous %v: want an admin and no anonymous access", us.Names(), us.Anonymous())
	}
	for _, pw := range []string{"", "admin", "change-me", "password"} {
		if _, err := us.Authenticate("admin", pw); err == nil {
			t.Errorf("the example's admin takes the password %q", pw)
		}
	}
}

// TestSystemdInstallSteps runs the install steps written at the top of
// deploy/locknode.service on a clean Debian's file system, in a
// directory standing for its root: every install must find its target
// directory made by an earlier step (or there on a clean system), every
// file the unit and its environment file name must be installed, and
// what the service's user reads must be readable by its group.
func TestSystemdInstallSteps(t *testing.T) {
	if _, err := exec.LookPath("install"); err != nil {
		if os.Getenv("LOCKNODE_CI") == "1" {
			t.Fatal("install (coreutils) not found (LOCKNODE_CI=1)")
		}
		t.Skip("install (coreutils) not found")
	}
	unit := string(readRepoFile(t, "deploy/locknode.service"))
	var steps []string
	for _, l := range strings.Split(unit[:strings.Index(unit, "[Unit]")], "\n") {
		if s, ok := strings.CutPrefix(l, "#   "); ok {
			if i := strings.Index(s, "   #"); i >= 0 {
				s = s[:i]
			}
			for _, c := range strings.Split(s, "&&") {
				steps = append(steps, strings.TrimSpace(c))
			}
		}
	}
	if len(steps) == 0 {
		t.Fatal("the unit names no install steps")
	}
	root, checkout := t.TempDir(), t.TempDir()
	for _, d := range []string{"/usr/local/bin", "/usr/sbin", "/etc/systemd/system", "/var/lib"} { // a clean Debian has them
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	groups := map[string]bool{"root": true}
	type installed struct {
		group string
		mode  os.FileMode
	}
	got := map[string]installed{}
	systemctl := false
	for i, step := range steps {
		f := strings.Fields(step)
		switch f[0] {
		case "useradd":
			name := f[len(f)-1]
			if !slices.Contains(f, "--system") || !slices.Contains(f, "--user-group") {
				t.Errorf("step %d: %s: want a system user with its own group", i+1, step)
			}
			groups[name] = true
		case "install":
			var args []string
			group, mode, dir := "root", os.FileMode(0o755), false
			for j := 1; j < len(f); j++ {
				switch f[j] {
				case "-d":
					dir = true
				case "-m":
					j++
					m, err := strconv.ParseUint(f[j], 8, 32)
					if err != nil {
						t.Fatalf("step %d: mode %q", i+1, f[j])
					}
					mode = os.FileMode(m)
				case "-o":
					j++
				case "-g":
					j++
					group = f[j]
					if !groups[group] {
						t.Errorf("step %d: group %s is not made by an earlier step", i+1, group)
					}
				default:
					a := f[j]
					if filepath.IsAbs(a) {
						a = filepath.Join(root, a) + map[bool]string{true: "/"}[strings.HasSuffix(f[j], "/")]
					} else if _, err := os.Stat(filepath.Join(checkout, a)); err != nil {
						// A file of the checkout, or one the operator brings
						// (a certificate, the users file made from its example).
						src := filepath.Join(repoRoot, a)
						if a == "deploy/users.acl" {
							src = filepath.Join(repoRoot, "deploy", "users.acl.example")
						}
						if strings.HasPrefix(a, "deploy/") {
							copyFile(t, src, filepath.Join(checkout, a))
						} else if err := os.MkdirAll(filepath.Dir(filepath.Join(checkout, a)), 0o755); err != nil {
							t.Fatal(err)
						} else if err := os.WriteFile(filepath.Join(checkout, a), []byte("x"), 0o600); err != nil {
							t.Fatal(err)
						}
					}
					args = append(args, a)
				}
			}
			cmdArgs := append([]string{"-m", fmt.Sprintf("%o", mode)}, args...)
			if dir {
				cmdArgs = append([]string{"-d"}, cmdArgs...)
			}
			cmd := exec.Command("install", cmdArgs...)
			cmd.Dir = checkout
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("step %d: %s: %v\n%s", i+1, step, err, out)
			}
			targets := args
			if !dir {
				last := args[len(args)-1]
				targets = nil
				if len(args) > 2 || strings.HasSuffix(last, "/") {
					for _, a := range args[:len(args)-1] {
						targets = append(targets, filepath.Join(last, filepath.Base(a)))
					}
				} else {
					targets = []string{last}
				}
			}
			for _, p := range targets {
				rel, _ := filepath.Rel(root, filepath.Clean(p))
				got["/"+filepath.ToSlash(rel)] = installed{group, mode}
			}
		case "systemctl":
			if _, ok := got["/etc/systemd/system/locknode.service"]; !ok {
				t.Errorf("step %d: %s before the unit is installed", i+1, step)
			}
			systemctl = true
		default:
			t.Errorf("step %d: %s: not a step this test knows", i+1, step)
		}
	}
	if !systemctl {
		t.Error("no systemctl step starts the service")
	}
	envFile := regexp.MustCompile(`(?m)^EnvironmentFile=(\S+)`).FindStringSubmatch(unit)
	exe := regexp.MustCompile(`(?m)^ExecStart=(\S+)`).FindStringSubmatch(unit)
	if envFile == nil || exe == nil {
		t.Fatal("the unit has no EnvironmentFile or ExecStart")
	}
	need := []string{envFile[1], exe[1]}
	env := envSettings(string(readRepoFile(t, "deploy/locknode.env")))
	for k, v := range env {
		if filepath.IsAbs(v) && k != "LOCKNODE_DATA" {
			need = append(need, v)
		}
	}
	user := regexp.MustCompile(`(?m)^User=(\S+)`).FindStringSubmatch(unit)
	for _, p := range need {
		in, ok := got[p]
		if !ok {
			t.Errorf("%s (named by the unit or its environment file) is made by no install step", p)
			continue
		}
		if _, err := os.Stat(filepath.Join(root, p)); err != nil {
			t.Errorf("%s: %v", p, err)
		}
		// What the service reads as its user: its group must read it, and
		// every directory on the way must let it through.
		if strings.HasPrefix(p, "/etc/locknode/") && p != envFile[1] {
			if user == nil || in.group != user[1] || in.mode&0o040 == 0 {
				t.Errorf("%s: group %s mode %o: the service's user cannot read it", p, in.group, in.mode)
			}
			for d := filepath.Dir(p); d != "/etc"; d = filepath.Dir(d) {
				if di, ok := got[d]; !ok || (di.group != user[1] && di.mode&0o001 == 0) || (di.group == user[1] && di.mode&0o010 == 0) {
					t.Errorf("%s: the service's user cannot pass %s (%+v)", p, d, di)
				}
			}
		}
	}
	// The data directory is systemd's StateDirectory.
	state := regexp.MustCompile(`(?m)^StateDirectory=(\S+)`).FindStringSubmatch(unit)
	if state == nil || env["LOCKNODE_DATA"] != "/var/lib/"+state[1] {
		t.Errorf("LOCKNODE_DATA=%s is not the unit's StateDirectory (%v)", env["LOCKNODE_DATA"], state)
	}
}

// TestSecurityDocCertificates runs the openssl commands of docs/security.md
// ("Certificates for the deploy examples", its own part before the
// sub-sections of each example) and checks that what they make is what
// serve takes: two nodes' peer certificates complete a mutual TLS
// handshake on the peer CA, each naming its node id, and the API
// certificate verifies for the client-facing name.
func TestSecurityDocCertificates(t *testing.T) {
	needPrograms(t, "bash", "openssl")
	dir := t.TempDir()
	runDocScript(t, dir, docScript(t, "## Certificates for the deploy examples"))
	f := func(name string) string { return filepath.Join(dir, name) }
	peerHandshake(t, dir, "n1", "n2", "n1")
	ca, err := tlsutil.LoadCAPool(f("peers-ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	checkAPICert(t, dir, ca, "locknode.example.com")
}

// needPrograms skips the test when one of progs is not installed (fails
// it under LOCKNODE_CI=1).
func needPrograms(t *testing.T, progs ...string) {
	t.Helper()
	for _, prog := range progs {
		if _, err := exec.LookPath(prog); err != nil {
			if os.Getenv("LOCKNODE_CI") == "1" {
				t.Fatalf("%s not found (LOCKNODE_CI=1)", prog)
			}
			t.Skipf("%s not found", prog)
		}
	}
}

// docScript is the script the ```sh blocks of one part of
// docs/security.md make: from the heading line ("## …" or "### …") to the
// next heading of either level.
func docScript(t *testing.T, heading string) string {
	t.Helper()
	doc := string(readRepoFile(t, "docs/security.md"))
	i := strings.Index(doc, "\n"+heading+"\n")
	if i < 0 {
		t.Fatalf("docs/security.md has no %q", heading)
	}
	section := doc[i+len(heading)+2:]
	if j := regexp.MustCompile(`\n###? `).FindStringIndex(section); j != nil {
		section = section[:j[0]]
	}
	var script strings.Builder
	for _, block := range regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(section, -1) {
		script.WriteString(block[1])
	}
	if script.Len() == 0 {
		t.Fatalf("docs/security.md %q has no sh block", heading)
	}
	return script.String()
}

// runDocScript runs script with bash (-euo pipefail) in dir, with env
// added to the environment. A kubectl on the PATH stands for the real
// one: it runs nothing and writes its arguments, one a line, to the file
// it returns.
func runDocScript(t *testing.T, dir, script string, env ...string) (kubectlArgs string) {
	t.Helper()
	bin := t.TempDir()
	kubectlArgs = filepath.Join(bin, "kubectl.args")
	fake := "#!/bin/sh\nprintf '%s\\n' \"$@\" > " + strconv.Quote(kubectlArgs) + "\n"
	if err := os.WriteFile(filepath.Join(bin, "kubectl"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", "-c", "set -euo pipefail\n"+script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	cmd.Env = append(cmd.Env, env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the commands of docs/security.md: %v\n%s", err, out)
	}
	return kubectlArgs
}

// peerHandshake runs a mutual TLS handshake between the peer
// certificates dir/server.crt and dir/client.crt on dir/peers-ca.crt,
// with serve's peer configurations, the client naming the server
// serverName (the host it dials); each side must see the other's id.
func peerHandshake(t *testing.T, dir, server, client, serverName string) {
	t.Helper()
	ca, err := tlsutil.LoadCAPool(filepath.Join(dir, "peers-ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	peer := func(id string) (server, client *tls.Config) {
		kp, err := tlsutil.NewKeyPair(filepath.Join(dir, id+".crt"), filepath.Join(dir, id+".key"))
		if err != nil {
			t.Fatal(err)
		}
		return tlsutil.PeerConfigs(kp, ca)
	}
	srv, _ := peer(server)
	_, cli := peer(client)
	cli = cli.Clone()
	cli.ServerName = serverName
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	errc := make(chan error, 1)
	sconn := tls.Server(a, srv)
	// Ends with the handshake: a failing client closes its end.
	go func() { errc <- sconn.Handshake() }()
	cconn := tls.Client(b, cli)
	if err := cconn.Handshake(); err != nil {
		b.Close()
		<-errc
		t.Fatalf("%s dialling %s as %s: %v", client, server, serverName, err)
	}
	if err := <-errc; err != nil {
		t.Fatalf("%s accepting %s: %v", server, client, err)
	}
	if got := tlsutil.NodeID(sconn.ConnectionState().PeerCertificates[0]); got != client {
		t.Errorf("%s sees peer %q, want %s", server, got, client)
	}
	if got := tlsutil.NodeID(cconn.ConnectionState().PeerCertificates[0]); got != server {
		t.Errorf("%s sees peer %q, want %s", client, got, server)
	}
}

// checkPeerCert checks that dir/id.crt (with its key) is a peer
// certificate of node id, signed by dir/peers-ca.crt, valid as server and
// client for the host peers dial.
func checkPeerCert(t *testing.T, dir, id, host string) {
	t.Helper()
	ca, err := tlsutil.LoadCAPool(filepath.Join(dir, "peers-ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	kp, err := tlsutil.NewKeyPair(filepath.Join(dir, id+".crt"), filepath.Join(dir, id+".key"))
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(kp.Certificate().Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	if got := tlsutil.NodeID(leaf); got != id {
		t.Errorf("%s.crt names node %q, want %s", id, got, id)
	}
	for _, usage := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: ca, DNSName: host, KeyUsages: []x509.ExtKeyUsage{usage}}); err != nil {
			t.Errorf("%s.crt for %s (usage %v): %v", id, host, usage, err)
		}
	}
}

// checkAPICert checks that dir/api.crt (with its key) verifies against
// dir/api-ca.crt for each name (a host name or an IP address), and not
// against the peer CA.
func checkAPICert(t *testing.T, dir string, peersCA *x509.CertPool, names ...string) {
	t.Helper()
	apiCA, err := tlsutil.LoadCAPool(filepath.Join(dir, "api-ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	kp, err := tlsutil.NewKeyPair(filepath.Join(dir, "api.crt"), filepath.Join(dir, "api.key"))
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(kp.Certificate().Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: apiCA, DNSName: name}); err != nil {
			t.Errorf("api.crt for %s: %v", name, err)
		}
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: peersCA}); err == nil {
		t.Error("api.crt verifies against the peer CA: the client ports and the peer port must not share a CA")
	}
}

// composeService is what the tests read of a service of
// docker-compose.yml.
type composeService struct {
	Environment map[string]string `yaml:"environment"`
	Volumes     []any             `yaml:"volumes"`
	Ports       []string          `yaml:"ports"`
	Healthcheck struct {
		Test []string `yaml:"test"`
	} `yaml:"healthcheck"`
}

func readCompose(t *testing.T) (compose struct {
	Services map[string]composeService `yaml:"services"`
}) {
	t.Helper()
	if err := yaml.Unmarshal(readRepoFile(t, "docker-compose.yml"), &compose); err != nil {
		t.Fatal(err)
	}
	return compose
}

// hostPath is the file of the checkout (a path relative to it) that a
// read-only bind mount of a file that must exist serves at path p in the
// container; "" when none does.
func (svc composeService) hostPath(p string) string {
	for _, v := range svc.Volumes {
		m, ok := v.(map[string]any)
		if !ok || m["type"] != "bind" || m["read_only"] != true {
			continue
		}
		if bind, _ := m["bind"].(map[string]any); bind["create_host_path"] != false {
			continue
		}
		target, _ := m["target"].(string)
		src, _ := m["source"].(string)
		if rest, ok := strings.CutPrefix(p, strings.TrimSuffix(target, "/")+"/"); ok && target != "" {
			return filepath.ToSlash(filepath.Join(src, rest))
		}
	}
	return ""
}

// tlsSettings are the variables of a deploy example secure by default:
// mutual TLS on the peer port and TLS on the client ports.
var tlsSettings = []string{"LOCKNODE_PEER_TLS_CERT", "LOCKNODE_PEER_TLS_KEY", "LOCKNODE_PEER_TLS_CA", "LOCKNODE_TLS_CERT", "LOCKNODE_TLS_KEY"}

// TestComposeFileSecure: every node runs mutual TLS on its peer port (its
// own certificate) and TLS on HTTP and RESP, from files under deploy/tls
// mounted read-only, which neither git nor the image's build context
// takes; nothing runs the peer port open; the health check speaks https.
func TestComposeFileSecure(t *testing.T) {
	for name, svc := range readCompose(t).Services {
		if v, ok := svc.Environment["LOCKNODE_INSECURE_PEER"]; ok {
			t.Errorf("service %s sets LOCKNODE_INSECURE_PEER=%s: the example runs peer TLS", name, v)
		}
		for _, k := range tlsSettings {
			v := svc.Environment[k]
			if hp := svc.hostPath(v); v == "" || !strings.HasPrefix(hp, "deploy/tls/") {
				t.Errorf("service %s: %s=%q is not a file of deploy/tls mounted read-only (%q)", name, k, v, hp)
			}
		}
		for k, ext := range map[string]string{"LOCKNODE_PEER_TLS_CERT": ".crt", "LOCKNODE_PEER_TLS_KEY": ".key"} {
			if got := filepath.Base(svc.Environment[k]); got != svc.Environment["LOCKNODE_ID"]+ext {
				t.Errorf("service %s: %s names %s, want the node's own %s%s", name, k, got, svc.Environment["LOCKNODE_ID"], ext)
			}
		}
		if hc := strings.Join(svc.Healthcheck.Test, " "); !strings.Contains(hc, "https://127.0.0.1:8080/readyz") {
			t.Errorf("service %s: health check %q does not ask https://127.0.0.1:8080/readyz (the image's asks http://, which a TLS port refuses)", name, hc)
		}
	}
	ig := parseDockerIgnore(string(readRepoFile(t, ".dockerignore")))
	gitignore := strings.Fields(string(readRepoFile(t, ".gitignore")))
	for _, f := range []string{"deploy/tls/n1.key", "deploy/tls-ca/peers-ca.key"} {
		if !ig.excludes(f) {
			t.Errorf(".dockerignore lets %s into the build context", f)
		}
		if dir := "/" + f[:strings.LastIndex(f, "/")+1]; !slices.Contains(gitignore, dir) {
			t.Errorf(".gitignore lacks %s", dir)
		}
	}
}

// TestSecurityDocComposeCertificates runs the script of docs/security.md
// for the compose example from a scratch checkout and checks that every
// file docker-compose.yml names is made, that each node's peer
// certificate names its LOCKNODE_ID and is valid for the host the others
// dial (its LOCKNODE_ADVERTISE and its entry in LOCKNODE_PEERS), that two
// nodes complete serve's mutual TLS handshake, that the API certificate
// is valid for the addresses clients use, that the mounted directory
// holds no CA key, and that the container's user can read the keys.
func TestSecurityDocComposeCertificates(t *testing.T) {
	needPrograms(t, "bash", "openssl")
	root := t.TempDir()
	runDocScript(t, root, docScript(t, "### Docker Compose"))
	compose := readCompose(t)
	tlsDir := filepath.Join(root, "deploy", "tls")
	for name, svc := range compose.Services {
		for _, k := range tlsSettings {
			hp := svc.hostPath(svc.Environment[k])
			if hp == "" {
				t.Fatalf("service %s: %s is not mounted", name, k)
			}
			fi, err := os.Stat(filepath.Join(root, hp))
			if err != nil {
				t.Errorf("service %s: %s: %v", name, k, err)
				continue
			}
			// Docker keeps the host's owner; the container runs as 10001.
			if fi.Mode().Perm()&0o004 == 0 {
				t.Errorf("service %s: %s (mode %v) is not readable by the container's user", name, hp, fi.Mode())
			}
		}
		id := svc.Environment["LOCKNODE_ID"]
		host, _, err := net.SplitHostPort(svc.Environment["LOCKNODE_ADVERTISE"])
		if err != nil {
			t.Fatalf("service %s: LOCKNODE_ADVERTISE: %v", name, err)
		}
		checkPeerCert(t, tlsDir, id, host)
		for _, p := range strings.Split(svc.Environment["LOCKNODE_PEERS"], ",") {
			pid, addr, _ := strings.Cut(p, "=")
			phost, _, err := net.SplitHostPort(addr)
			if err != nil {
				t.Fatalf("service %s: LOCKNODE_PEERS %q: %v", name, p, err)
			}
			checkPeerCert(t, tlsDir, pid, phost)
		}
	}
	peerHandshake(t, tlsDir, "n1", "n2", "n1")
	peersCA, err := tlsutil.LoadCAPool(filepath.Join(tlsDir, "peers-ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	// The published ports, and the service names on the compose network.
	checkAPICert(t, tlsDir, peersCA, "127.0.0.1", "localhost", "n1", "n2", "n3")
	files, err := os.ReadDir(tlsDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.Contains(f.Name(), "ca.key") {
			t.Errorf("deploy/tls/%s: a CA key in the directory the containers mount", f.Name())
		}
	}
}

// k8sContainer is the StatefulSet's pod spec and its first container,
// with the container's variables in order.
func k8sContainer(t *testing.T) (sts, pod, c any, env []k8sEnv) {
	t.Helper()
	docs := k8sDocs(t)
	if len(docs["StatefulSet"]) != 1 {
		t.Fatalf("%d StatefulSets, want 1", len(docs["StatefulSet"]))
	}
	sts = docs["StatefulSet"][0]
	pod = dig(sts, "spec", "template", "spec")
	c = dig(pod, "containers", 0)
	envs, _ := dig(c, "env").([]any)
	for _, e := range envs {
		n, _ := dig(e, "name").(string)
		v, _ := dig(e, "value").(string)
		f, _ := dig(e, "valueFrom", "fieldRef", "fieldPath").(string)
		env = append(env, k8sEnv{n, v, f})
	}
	return sts, pod, c, env
}

type k8sEnv struct{ name, value, fieldPath string }

// k8sSecretMount is where the pod mounts the Secret named secret, and
// whether read-only; "" when it does not.
func k8sSecretMount(pod, c any, secret string) (mountPath string, mode any, readOnly bool) {
	vols, _ := dig(pod, "volumes").([]any)
	for _, v := range vols {
		if dig(v, "secret", "secretName") != secret {
			continue
		}
		mounts, _ := dig(c, "volumeMounts").([]any)
		for _, m := range mounts {
			if dig(m, "name") == dig(v, "name") {
				p, _ := dig(m, "mountPath").(string)
				return strings.TrimSuffix(p, "/"), dig(v, "secret", "defaultMode"), dig(m, "readOnly") == true
			}
		}
	}
	return "", nil, false
}

var k8sVarRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// TestKubernetesExampleSecure: the pods run mutual TLS on the peer port,
// each with its own certificate picked by $(POD_NAME), and TLS on HTTP
// and RESP, from the locknode-tls Secret mounted read-only with keys
// unreadable by others; nothing runs the peer port open; the probes speak
// HTTPS; every $(VAR) is a variable defined before it (Kubernetes leaves
// any other as written).
func TestKubernetesExampleSecure(t *testing.T) {
	_, pod, c, envs := k8sContainer(t)
	env := map[string]string{}
	defined := map[string]k8sEnv{}
	for _, e := range envs {
		for _, m := range k8sVarRef.FindAllStringSubmatch(e.value, -1) {
			if _, ok := defined[m[1]]; !ok {
				t.Errorf("%s=%q refers to $(%s), which no variable before it defines", e.name, e.value, m[1])
			}
		}
		defined[e.name] = e
		env[e.name] = e.value
	}
	if defined["POD_NAME"].fieldPath != "metadata.name" {
		t.Errorf("POD_NAME is %+v, want the field metadata.name", defined["POD_NAME"])
	}
	if v, ok := env["LOCKNODE_INSECURE_PEER"]; ok {
		t.Errorf("LOCKNODE_INSECURE_PEER=%s: the example runs peer TLS", v)
	}
	args, _ := dig(c, "args").([]any)
	for _, a := range args {
		if s, _ := a.(string); strings.HasPrefix(s, "--insecure-peer") {
			t.Errorf("args %v run the peer port open", args)
		}
	}
	mount, mode, ro := k8sSecretMount(pod, c, "locknode-tls")
	if mount == "" || !ro {
		t.Fatalf("the Secret locknode-tls is not mounted read-only (%q, read-only %v)", mount, ro)
	}
	if m, ok := mode.(int); !ok || m&0o007 != 0 {
		t.Errorf("locknode-tls defaultMode %v: the keys are readable by any user of the container", mode)
	}
	for _, k := range tlsSettings {
		if v := env[k]; !strings.HasPrefix(v, mount+"/") {
			t.Errorf("%s=%q is not a file of the Secret locknode-tls (%s)", k, v, mount)
		}
	}
	for _, k := range []string{"LOCKNODE_ID", "LOCKNODE_PEER_TLS_CERT", "LOCKNODE_PEER_TLS_KEY"} {
		if !strings.Contains(env[k], "$(POD_NAME)") {
			t.Errorf("%s=%q is not the pod's own: it does not use $(POD_NAME)", k, env[k])
		}
	}
	for _, probe := range []string{"livenessProbe", "readinessProbe"} {
		if s := dig(c, probe, "httpGet", "scheme"); s != "HTTPS" {
			t.Errorf("%s scheme %v, want HTTPS: the HTTP port serves TLS", probe, s)
		}
	}
}

// TestSecurityDocKubernetesCertificates runs the script of
// docs/security.md for the Kubernetes example (kubectl stands in) and
// checks it against the manifest: each pod's peer certificate, at the
// path its variables name once Kubernetes expands $(POD_NAME), names
// the pod's LOCKNODE_ID and is valid for the host of its
// LOCKNODE_ADVERTISE and of its LOCKNODE_PEERS entry in the namespace
// given; two pods complete serve's mutual TLS handshake; the API
// certificate is valid for the client service's names and the pods'; and
// the kubectl command creates the Secret the pods mount with exactly the
// files they read, plus api-ca.crt for clients, and no CA key.
func TestSecurityDocKubernetesCertificates(t *testing.T) {
	needPrograms(t, "bash", "openssl")
	sts, pod, c, envs := k8sContainer(t)
	env := map[string]string{}
	for _, e := range envs {
		env[e.name] = e.value
	}
	const ns = "locks"
	dir := t.TempDir()
	argsFile := runDocScript(t, dir, docScript(t, "### Kubernetes"), "NS="+ns)

	mount, _, _ := k8sSecretMount(pod, c, "locknode-tls")
	replicas, _ := dig(sts, "spec", "replicas").(int)
	stsName, _ := dig(sts, "metadata", "name").(string)
	if replicas < 3 || stsName == "" || mount == "" {
		t.Fatalf("StatefulSet %q, %d replicas, locknode-tls mounted at %q", stsName, replicas, mount)
	}
	need := map[string]bool{"api-ca.crt": true} // for clients
	var pods, hosts []string
	for i := range replicas {
		podName := fmt.Sprintf("%s-%d", stsName, i)
		expand := strings.NewReplacer("$(POD_NAME)", podName, "$(POD_NAMESPACE)", ns).Replace
		for _, k := range tlsSettings {
			rel, ok := strings.CutPrefix(expand(env[k]), mount+"/")
			if !ok {
				t.Fatalf("%s=%q is not under %s", k, env[k], mount)
			}
			need[rel] = true
		}
		id := expand(env["LOCKNODE_ID"])
		if got := filepath.Base(expand(env["LOCKNODE_PEER_TLS_CERT"])); got != id+".crt" {
			t.Errorf("pod %s reads %s, want %s.crt", podName, got, id)
		}
		host, _, err := net.SplitHostPort(expand(env["LOCKNODE_ADVERTISE"]))
		if err != nil {
			t.Fatalf("LOCKNODE_ADVERTISE: %v", err)
		}
		checkPeerCert(t, dir, id, host)
		pods, hosts = append(pods, id), append(hosts, host)
		for _, p := range strings.Split(expand(env["LOCKNODE_PEERS"]), ",") {
			if pid, addr, _ := strings.Cut(p, "="); pid == id {
				phost, _, err := net.SplitHostPort(addr)
				if err != nil {
					t.Fatalf("LOCKNODE_PEERS %q: %v", p, err)
				}
				checkPeerCert(t, dir, id, phost)
			}
		}
	}
	if want := "locknode-1.locknode." + ns + ".svc.cluster.local"; hosts[1] != want {
		t.Errorf("pod locknode-1 advertises %s, want %s (its name in the headless service)", hosts[1], want)
	}
	peerHandshake(t, dir, pods[1], pods[2], hosts[1])

	peersCA, err := tlsutil.LoadCAPool(filepath.Join(dir, "peers-ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	var client string
	for _, svc := range k8sDocs(t)["Service"] {
		if dig(svc, "spec", "clusterIP") != "None" {
			client, _ = dig(svc, "metadata", "name").(string)
		}
	}
	if client == "" {
		t.Fatal("no client Service")
	}
	// The client service's names, each pod's (status --cluster dials the
	// members' advertised HTTP addresses), and a port-forward's.
	checkAPICert(t, dir, peersCA, append([]string{client, client + "." + ns, client + "." + ns + ".svc.cluster.local", "localhost", "127.0.0.1"}, hosts...)...)

	b, err := os.ReadFile(argsFile)
	if err != nil {
		t.Fatalf("the script runs no kubectl: %v", err)
	}
	args := strings.Fields(string(b))
	if len(args) < 4 || strings.Join(args[:4], " ") != "create secret generic locknode-tls" {
		t.Fatalf("kubectl %v: want create secret generic locknode-tls", args)
	}
	if i := slices.Index(args, "--namespace"); i < 0 || i+1 == len(args) || args[i+1] != ns {
		t.Errorf("kubectl %v: not in the namespace NS=%s", args, ns)
	}
	got := map[string]bool{}
	for _, a := range args {
		if f, ok := strings.CutPrefix(a, "--from-file="); ok {
			got[f] = true
			if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
				t.Errorf("--from-file=%s: %v", f, err)
			}
			if strings.HasSuffix(f, "ca.key") {
				t.Errorf("--from-file=%s: a CA key in the Secret the pods mount", f)
			}
		}
	}
	for f := range need {
		if !got[f] {
			t.Errorf("the Secret lacks %s, which the pods read", f)
		}
	}
	for f := range got {
		if !need[f] {
			t.Errorf("the Secret holds %s, which no pod reads", f)
		}
	}
}
