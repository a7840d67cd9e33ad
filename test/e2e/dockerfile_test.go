package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// dockerInstruction is one instruction of a Dockerfile, continuation lines joined.
type dockerInstruction struct {
	cmd  string // upper case
	args string
}

// parseDockerfile splits a Dockerfile into instructions (comments and blank lines dropped,
// backslash continuations joined).
func parseDockerfile(text string) []dockerInstruction {
	var out []dockerInstruction
	var cur strings.Builder
	for _, raw := range strings.Split(text, "\n") {
		line := strings.TrimSpace(raw)
		if cur.Len() == 0 && (line == "" || strings.HasPrefix(line, "#")) {
			continue
		}
		if strings.HasSuffix(line, "\\") {
			cur.WriteString(strings.TrimSuffix(line, "\\") + " ")
			continue
		}
		cur.WriteString(line)
		full := cur.String()
		cur.Reset()
		cmd, args, _ := strings.Cut(full, " ")
		out = append(out, dockerInstruction{cmd: strings.ToUpper(cmd), args: strings.TrimSpace(args)})
	}
	return out
}

// checkDockerBuildStamps runs the Dockerfile's build instruction with sh, as docker does, with
// the build arguments `make image` passes and a fake go that prints its -ldflags, and wants the
// version stamps of `make build`: the release version from VERSION and the Kubernetes version.
func checkDockerBuildStamps(t *testing.T, root, build string) {
	t.Helper()
	version := strings.TrimSpace(readFile(t, filepath.Join(root, "VERSION")))
	km := regexp.MustCompile(`(?m)^KUBE_VERSION\s*:=\s*(v(\d+)\.(\d+)\.\d+)\s*$`).FindStringSubmatch(readFile(t, filepath.Join(root, "Makefile")))
	if km == nil {
		t.Fatal("Makefile has no KUBE_VERSION := vX.Y.Z")
	}
	fake := t.TempDir()
	out := filepath.Join(fake, "ldflags")
	script := "#!/bin/sh\nwhile [ $# -gt 0 ]; do if [ \"$1\" = -ldflags ]; then printf '%s' \"$2\" > " + out + "; fi; shift; done\n"
	if err := os.WriteFile(filepath.Join(fake, "go"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("/bin/sh", "-c", build)
	cmd.Env = []string{"PATH=" + fake + ":/usr/bin:/bin", "TARGETOS=linux", "TARGETARCH=amd64",
		"VERSION=" + version, "KUBE_VERSION=" + km[1]}
	if o, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the build instruction with a fake go: %v\n%s", err, o)
	}
	ld := strings.Fields(readFile(t, out))
	kv := "k8s.io/component-base/version."
	for _, want := range []string{
		"github.com/moirai-internal/ome-scheduler/internal/version.Version=v" + version,
		kv + "gitVersion=" + km[1], kv + "gitMajor=" + km[2], kv + "gitMinor=" + km[3],
	} {
		if !contains(ld, want) {
			t.Errorf("the image's go build -ldflags %q lack -X %s", ld, want)
		}
	}
}

func containsPrefix(list []string, prefix string) bool {
	for _, s := range list {
		if strings.HasPrefix(s, prefix) {
			return true
		}
	}
	return false
}

// TestDockerfile pins the facts the chart and the release rely on, since the image cannot be
// built on the CI machines: a static (CGO_ENABLED=0), trimmed, stripped build of
// ./cmd/ome-scheduler for TARGETOS/TARGETARCH on golang:${GO_VERSION} (the go.mod language
// version), a distroless static nonroot base, the binary at /ome-scheduler (the chart's
// container command), the numeric nonroot user 65532 (the chart sets runAsNonRoot, which a
// non-numeric user would fail), the exec-form entrypoint, and the version stamps of `make build`
// from the build arguments VERSION and KUBE_VERSION.
func TestDockerfile(t *testing.T) {
	root := repoRoot(t)
	b, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	ins := parseDockerfile(string(b))

	// Stages.
	var froms []dockerInstruction
	var finalStage []dockerInstruction
	for _, in := range ins {
		if in.cmd == "FROM" {
			froms = append(froms, in)
			finalStage = nil
			continue
		}
		if len(froms) > 0 {
			finalStage = append(finalStage, in)
		}
	}
	if len(froms) < 2 {
		t.Fatalf("want a multi-stage build, got %d FROM instructions", len(froms))
	}
	builderRe := regexp.MustCompile(`^(--platform=\$\{?BUILDPLATFORM\}?\s+)?golang:\$\{?GO_VERSION\}?\s+(?i:AS)\s+(\S+)$`)
	m := builderRe.FindStringSubmatch(froms[0].args)
	if m == nil {
		t.Fatalf("first stage must be `FROM golang:${GO_VERSION} AS <name>`, got %q", froms[0].args)
	}
	builder := m[2]
	if last := froms[len(froms)-1].args; last != "gcr.io/distroless/static:nonroot" {
		t.Errorf("final stage must be FROM gcr.io/distroless/static:nonroot, got %q", last)
	}

	// GO_VERSION defaults to the go.mod language version (major.minor).
	goVersion := ""
	for _, in := range ins {
		if in.cmd == "ARG" && strings.HasPrefix(in.args, "GO_VERSION=") {
			goVersion = strings.TrimPrefix(in.args, "GO_VERSION=")
		}
	}
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	gm := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(gomod)
	if gm == nil {
		t.Fatal("go.mod has no go directive")
	}
	if goVersion != string(gm[1]) {
		t.Errorf("ARG GO_VERSION=%q, want %q (the go.mod language version)", goVersion, gm[1])
	}

	// The build.
	var build string
	var args []string
	for _, in := range ins {
		if in.cmd == "ARG" {
			args = append(args, strings.Fields(in.args)...)
		}
		if in.cmd == "RUN" && strings.Contains(in.args, "go build") {
			build = in.args
		}
	}
	if build == "" {
		t.Fatal("no RUN ... go build instruction")
	}
	for _, a := range []string{"TARGETOS", "TARGETARCH"} {
		if !contains(args, a) {
			t.Errorf("builder stage must declare ARG %s", a)
		}
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(^|\s)CGO_ENABLED=0\s`),
		regexp.MustCompile(`(^|\s)GOOS=\$\{?TARGETOS\}?\s`),
		regexp.MustCompile(`(^|\s)GOARCH=\$\{?TARGETARCH\}?\s`),
		regexp.MustCompile(`\sgo build\s(.*\s)?-trimpath\s`),
		regexp.MustCompile(`\s-ldflags[ =]["']-s -w["'\s]`),
		regexp.MustCompile(`\s\./cmd/ome-scheduler\s*$`),
	} {
		if !want.MatchString(" " + build) {
			t.Errorf("go build instruction %q does not match %s", build, want)
		}
	}
	for _, a := range []string{"VERSION", "KUBE_VERSION"} {
		if !contains(args, a) && !containsPrefix(args, a+"=") {
			t.Errorf("builder stage must declare ARG %s (make image passes it)", a)
		}
	}
	checkDockerBuildStamps(t, root, build)
	om := regexp.MustCompile(`\s-o\s+(\S+)`).FindStringSubmatch(build)
	if om == nil {
		t.Fatalf("go build instruction %q has no -o", build)
	}
	out := om[1]

	// The final stage: binary, user, entrypoint.
	var copied, user, entrypoint string
	for _, in := range finalStage {
		switch in.cmd {
		case "COPY":
			f := strings.Fields(in.args)
			if len(f) == 3 && f[0] == "--from="+builder && f[1] == out {
				copied = f[2]
			}
		case "USER":
			user = in.args
		case "ENTRYPOINT":
			entrypoint = in.args
		case "RUN":
			t.Errorf("final stage runs %q: distroless/static has no shell", in.args)
		}
	}
	if copied != "/ome-scheduler" {
		t.Errorf("final stage must COPY --from=%s %s /ome-scheduler, got destination %q", builder, out, copied)
	}
	if user != "65532:65532" {
		t.Errorf("USER %q, want 65532:65532 (numeric nonroot, required by runAsNonRoot)", user)
	}
	var ep []string
	if err := json.Unmarshal([]byte(entrypoint), &ep); err != nil || len(ep) != 1 || ep[0] != "/ome-scheduler" {
		t.Errorf(`ENTRYPOINT %s, want exec form ["/ome-scheduler"]`, entrypoint)
	}

	// The chart's container command is the image's binary.
	deploy := ""
	for _, o := range splitObjects(t, helmTemplate(t, "--show-only", "templates/deployment.yaml")) {
		if o.GetKind() == "Deployment" {
			cs, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
			if len(cs) > 0 {
				if c, ok := cs[0].(map[string]any); ok {
					if cmd, ok := c["command"].([]any); ok && len(cmd) > 0 {
						deploy, _ = cmd[0].(string)
					}
				}
			}
		}
	}
	if deploy != "/ome-scheduler" {
		t.Errorf("chart container command[0] = %q, want /ome-scheduler (the image's binary)", deploy)
	}

	// .dockerignore keeps binaries, git data and test artefacts out of the build context.
	di, err := os.ReadFile(filepath.Join(root, ".dockerignore"))
	if err != nil {
		t.Fatal(err)
	}
	var ignored []string
	for _, l := range strings.Split(string(di), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			ignored = append(ignored, strings.TrimPrefix(strings.TrimSuffix(l, "/"), "/"))
		}
	}
	for _, want := range []string{"bin", ".git", "*.test"} {
		if !contains(ignored, want) {
			t.Errorf(".dockerignore lacks %s (has %v)", want, ignored)
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
