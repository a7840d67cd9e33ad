package chart_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/moirai-internal/ome-scheduler/internal/devenv"
)

// ---------------------------------------------------------------------------------------
// Release artefacts: VERSION, `make chart`, `make image`

// releaseVersion is the content of the VERSION file: the one place the release version lives.
func releaseVersion(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	v := strings.TrimSpace(string(b))
	if v == "" || strings.ContainsAny(v, " \t\n") || string(b) != v+"\n" {
		t.Fatalf("VERSION must hold one version and a newline, got %q", b)
	}
	return v
}

// runMake runs make in the repository root with the given arguments and returns stdout.
func runMake(t *testing.T, args ...string) string {
	t.Helper()
	if _, err := exec.LookPath("make"); err != nil {
		t.Fatalf("make not found: %v", err)
	}
	cmd := exec.Command("make", append([]string{"--no-print-directory", "-C", repoRoot(t)}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	home := t.TempDir()
	cmd.Env = append(os.Environ(),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_DATA_HOME="+filepath.Join(home, "data"),
		"MAKEFLAGS=", "MAKELEVEL=",
	)
	if err := cmd.Run(); err != nil {
		t.Fatalf("make %s: %v\n%s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// Chart.yaml carries the version of the VERSION file as version and, with a leading v (the
// image tag convention), as appVersion, so a `helm install` from the repository path and one
// from `make chart`'s package run the same image tag, the one `make image` builds.
func TestVersionFile(t *testing.T) {
	v := releaseVersion(t)
	if !regexp.MustCompile(`^\d+\.\d+\.\d+$`).MatchString(v) {
		t.Errorf("VERSION %q is not MAJOR.MINOR.PATCH without a v (the chart's SemVer version)", v)
	}
	cv, av := chartMeta(t)
	wantEq(t, "Chart.yaml version (VERSION)", cv, v)
	wantEq(t, "Chart.yaml appVersion (v + VERSION)", av, "v"+v)
}

// `make build` stamps bin/ome-scheduler with the release version (v + VERSION), which
// `ome-scheduler --version` prints, and keeps the Kubernetes version stamp KUBE_VERSION.
func TestMakeBuildStampsVersion(t *testing.T) {
	v := releaseVersion(t)
	out := runMake(t, "-n", "build")
	if re := regexp.MustCompile(`-X github\.com/moirai-internal/ome-scheduler/internal/version\.Version=v` + regexp.QuoteMeta(v) + `["\s]`); !re.MatchString(out) {
		t.Errorf("make -n build does not stamp the release version v%s (%s):\n%s", v, re, out)
	}
	wantContains(t, "make -n build", out, "-X k8s.io/component-base/version.gitVersion=v1.35.")
	wantContains(t, "make -n build", out, " ./cmd/ome-scheduler")
}

// `make chart` packages charts/ome-scheduler with helm package --version/--app-version from
// VERSION into $(CHART_DIST)/ome-scheduler-<version>.tgz; the archive holds every file of the
// chart directory but the example values files (examples/, listed in .helmignore), carries
// that version and renders the image tag from it.
func TestMakeChart(t *testing.T) {
	helmBin(t) // fail early with "run make tools" instead of letting make build helm
	v := releaseVersion(t)
	dist := t.TempDir()
	out := runMake(t, "chart", "CHART_DIST="+dist)
	wantContains(t, "make chart", out, "helm package charts/ome-scheduler --version "+v+" --app-version v"+v+" --destination "+dist)
	tgz := filepath.Join(dist, "ome-scheduler-"+v+".tgz")
	wantContains(t, "make chart", out, "Successfully packaged chart and saved it to: "+tgz)

	files := untar(t, tgz)
	var got []string
	for name := range files {
		got = append(got, name)
	}
	sort.Strings(got)
	var want []string
	err := filepath.WalkDir(chartDir(t), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(chartDir(t), path)
		if d.IsDir() {
			if rel == "examples" {
				return fs.SkipDir
			}
			return nil
		}
		want = append(want, "ome-scheduler/"+filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(want)
	wantEq(t, "files in "+filepath.Base(tgz), strings.Join(got, "\n"), strings.Join(want, "\n"))

	var meta map[string]any
	if err := yaml.Unmarshal(files["ome-scheduler/Chart.yaml"], &meta); err != nil {
		t.Fatal(err)
	}
	wantEq(t, "packaged Chart.yaml version", meta["version"], v)
	wantEq(t, "packaged Chart.yaml appVersion", meta["appVersion"], "v"+v)
	wantEq(t, "packaged Chart.yaml kubeVersion", meta["kubeVersion"], ">=1.35.0-0 <1.36.0-0")
	for _, f := range []string{"values.yaml", "values.schema.json", "README.md", "templates/deployment.yaml", "crds/scheduling.x-k8s.io_podgroups.yaml"} {
		orig, err := os.ReadFile(filepath.Join(chartDir(t), f))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(files["ome-scheduler/"+f], orig) {
			t.Errorf("packaged %s differs from charts/ome-scheduler/%s", f, f)
		}
	}

	// The package renders like the directory, with the image tag v + VERSION.
	res := helmTemplate(t, devenv.HelmRender{Chart: tgz})
	if res.err != nil {
		t.Fatalf("helm template %s: %v\n%s", tgz, res.err, res.stderr)
	}
	wantLine(t, "render of the package", res.stdout, "        image: ome-scheduler:v"+v)
	wantLine(t, "render of the package", res.stdout, "    helm.sh/chart: ome-scheduler-"+v)
}

// `make image` tags the image with the reference the chart renders by default (with
// global.hub=HUB when HUB is given): repository ome-scheduler, tag v + VERSION, and passes
// VERSION and KUBE_VERSION as build arguments (the Dockerfile stamps them like `make build`,
// test/e2e TestDockerfile). The recipes are checked with make -n, since the test machines have
// no Docker engine.
func TestMakeImage(t *testing.T) {
	v := releaseVersion(t)
	const hub = "registry.example.com/ome"
	r := render(t, "--set", "global.hub="+hub)
	img, _ := dig(r.get(t, "Deployment", releaseName).obj, "spec", "template", "spec", "containers", 0, "image").(string)
	wantEq(t, "chart image with global.hub", img, hub+"/ome-scheduler:v"+v)
	r = render(t)
	def, _ := dig(r.get(t, "Deployment", releaseName).obj, "spec", "template", "spec", "containers", 0, "image").(string)
	wantEq(t, "chart image by default", def, "ome-scheduler:v"+v)
	ba := "--build-arg VERSION=" + v + " --build-arg KUBE_VERSION=" + kubeVersionOfMakefile(t)

	cases := []struct {
		name string
		args []string
		want []string
	}{
		{"docker build, no push", []string{"BUILDX="}, []string{"docker build " + ba + " -t " + def + " ."}},
		{"docker build and push to HUB", []string{"BUILDX=", "HUB=" + hub, "PUSH=1"},
			[]string{"docker build " + ba + " -t " + img + " .", "docker push " + img}},
		{"buildx, both platforms, pushed", []string{"BUILDX=1", "HUB=" + hub + "/", "PUSH=1"},
			[]string{"docker buildx build --platform linux/amd64,linux/arm64 " + ba + " -t " + img + " --push ."}},
		{"buildx, both platforms, build cache only", []string{"BUILDX=1"},
			[]string{"docker buildx build --platform linux/amd64,linux/arm64 " + ba + " -t " + def + " ."}},
		{"buildx, one platform, loaded", []string{"BUILDX=1", "PLATFORMS=linux/arm64"},
			[]string{"docker buildx build --platform linux/arm64 " + ba + " -t " + def + " --load ."}},
		{"explicit IMAGE", []string{"BUILDX=", "IMAGE=quay.io/acme/ome-scheduler:" + v, "PUSH=1"},
			[]string{"docker build " + ba + " -t quay.io/acme/ome-scheduler:" + v + " .", "docker push quay.io/acme/ome-scheduler:" + v}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := runMake(t, append([]string{"-n", "image"}, tc.args...)...)
			var got []string
			for _, l := range strings.Split(out, "\n") {
				if strings.TrimSpace(l) != "" {
					got = append(got, l)
				}
			}
			wantEq(t, "make -n image "+strings.Join(tc.args, " "), strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
		})
	}
}

// kubeVersionOfMakefile is the Makefile's KUBE_VERSION, the Kubernetes version the binaries are
// stamped with.
func kubeVersionOfMakefile(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^KUBE_VERSION\s*:=\s*(v\S+)\s*$`).FindSubmatch(b)
	if m == nil {
		t.Fatal("Makefile has no KUBE_VERSION := v...")
	}
	return string(m[1])
}

// untar returns the regular files of a .tgz by name.
func untar(t *testing.T, path string) map[string][]byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	files := map[string][]byte{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files[h.Name] = b
	}
	return files
}
