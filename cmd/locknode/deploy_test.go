package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
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
	var compose struct {
		Services map[string]struct {
			Environment map[string]string `yaml:"environment"`
			Volumes     []string          `yaml:"volumes"`
			Ports       []string          `yaml:"ports"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal(readRepoFile(t, "docker-compose.yml"), &compose); err != nil {
		t.Fatal(err)
	}
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
