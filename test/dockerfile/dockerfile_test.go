package dockerfile

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// makeVar returns the value of a variable of the repository's Makefile, as make expands it.
func makeVar(t *testing.T, name string) string {
	t.Helper()
	cmd := exec.Command("make", "--no-print-directory", "-s", "--eval", "print-%: ; @echo '$($*)'", "print-"+name)
	cmd.Dir = filepath.Join("..", "..")
	for _, kv := range os.Environ() { // the Makefile's defaults, not an override in the environment
		if k, _, _ := strings.Cut(kv, "="); k != name && k != "MAKEFLAGS" && k != "MAKELEVEL" {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("make print-%s: %v", name, err)
	}
	return strings.Join(strings.Fields(string(out)), " ")
}

// TestDockerfileBuildsTheKoImage checks the top-level Dockerfile, as BuildKit parses it, against
// what `make image` gives ko: the base image pinned by the same digest, the binary compiled
// static with -trimpath and the Makefile's ldflags (the release in VERSION), copied to ko's
// entrypoint path, which the chart's Deployment runs (it sets only args), and user 65532:65532.
// test/e2e/release_test.go compares the rest (environment, working directory, labels) with the
// config of the image ko pushed.
func TestDockerfileBuildsTheKoImage(t *testing.T) {
	img, err := Load(filepath.Join("..", "..", "Dockerfile"), nil)
	if err != nil {
		t.Fatal(err)
	}
	base := makeVar(t, "BASE_IMAGE")
	if img.Base != base {
		t.Errorf("Dockerfile base %q, Makefile BASE_IMAGE %q: want the same", img.Base, base)
	}
	if _, digest, ok := strings.Cut(base, "@sha256:"); !ok || len(digest) != 64 {
		t.Errorf("BASE_IMAGE %q is not pinned by a sha256 digest", base)
	}
	want := "-s -w " + makeVar(t, "KUBE_LDFLAGS") + " " + makeVar(t, "OME_LDFLAGS")
	if got, _ := img.Flag("-ldflags"); got != want {
		t.Errorf("Dockerfile -ldflags\n %q\nwant the Makefile's (KUBE_LDFLAGS OME_LDFLAGS, as make image passes them)\n %q", got, want)
	}
	version, err := os.ReadFile(filepath.Join("..", "..", "VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := img.Flag("-ldflags"); !strings.Contains(got, "internal/version.Version=v"+strings.TrimSpace(string(version))+" ") &&
		!strings.HasSuffix(got, "internal/version.Version=v"+strings.TrimSpace(string(version))) {
		t.Errorf("Dockerfile -ldflags do not stamp the release v%s of VERSION: %q", strings.TrimSpace(string(version)), got)
	}
	for _, w := range []string{"CGO_ENABLED=0", "-trimpath", "./cmd/ome-scheduler"} {
		if !contains(img.Build, w) {
			t.Errorf("the builder's go build lacks %q: %q", w, img.Build)
		}
	}
	out, _ := img.Flag("-o")
	if len(img.Entrypoint) != 1 || img.Entrypoint[0] != "/ko-app/ome-scheduler" || img.Copied[img.Entrypoint[0]] != "builder:"+out {
		t.Errorf("entrypoint %q, copied %v, built to %q: want the built binary at ko's /ko-app/ome-scheduler", img.Entrypoint, img.Copied, out)
	}
	if img.User != "65532:65532" {
		t.Errorf("USER %q, want 65532:65532 (make image's --image-user)", img.User)
	}
	deploy, err := os.ReadFile(filepath.Join("..", "..", "charts", "ome-scheduler", "templates", "deployment.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(deploy), "command:") {
		t.Errorf("the chart's Deployment sets a command; the Dockerfile's entrypoint must then match it")
	}
}

// TestLoadExpandsBuildArgs checks that --build-arg values replace the defaults, as in docker build.
func TestLoadExpandsBuildArgs(t *testing.T) {
	img, err := Load(filepath.Join("..", "..", "Dockerfile"), map[string]string{"BASE_IMAGE": "mirror.example/static@sha256:00", "VERSION": "9.9.9"})
	if err != nil {
		t.Fatal(err)
	}
	ld, _ := img.Flag("-ldflags")
	if img.Base != "mirror.example/static@sha256:00" || !strings.HasSuffix(ld, "Version=v9.9.9") {
		t.Errorf("with build args: base %q, ldflags %q", img.Base, ld)
	}
}
