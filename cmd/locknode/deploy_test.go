package main

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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
	found := false
	for {
		var doc struct {
			Kind string `yaml:"kind"`
			Spec struct {
				Template struct {
					Spec struct {
						Containers []struct {
							Args []string `yaml:"args"`
							Env  []struct {
								Name string `yaml:"name"`
							} `yaml:"env"`
							Liveness  probe `yaml:"livenessProbe"`
							Readiness probe `yaml:"readinessProbe"`
						} `yaml:"containers"`
					} `yaml:"spec"`
				} `yaml:"template"`
			} `yaml:"spec"`
		}
		err := dec.Decode(&doc)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
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
			for _, e := range c.Env {
				if strings.HasPrefix(e.Name, "LOCKNODE_") {
					checkSetting(t, help, "statefulset env", e.Name)
				}
			}
		}
	}
	if !found {
		t.Fatal("no StatefulSet in the example")
	}
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
