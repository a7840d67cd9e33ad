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
	out, err := runMakeErr(t, args...)
	if err != nil {
		t.Fatalf("make %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// runMakeErr runs make in the repository with a private Helm home; it returns stdout, or
// stdout and stderr with the error.
func runMakeErr(t *testing.T, args ...string) (string, error) {
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
		return stdout.String() + stderr.String(), err
	}
	return stdout.String(), nil
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
	helmBin(t) // fail early with "run make bin/helm" instead of letting make build helm
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

// `make image` and `make publish` build the image with ko under the reference the chart renders
// by default (with global.hub=HUB when HUB is given): repository ome-scheduler, tag v + VERSION,
// the binary stamped like `make build`, user 65532:65532. The recipes are checked here with
// make -n; test/e2e TestQuickstart runs `make image` and `make publish` against a registry.
func TestMakeImage(t *testing.T) {
	v := releaseVersion(t)
	const hub = "registry.example.com/ome"
	r := render(t, "--set", "global.hub="+hub)
	img, _ := dig(r.get(t, "Deployment", releaseName).obj, "spec", "template", "spec", "containers", 0, "image").(string)
	wantEq(t, "chart image with global.hub", img, hub+"/ome-scheduler:v"+v)
	r = render(t)
	def, _ := dig(r.get(t, "Deployment", releaseName).obj, "spec", "template", "spec", "containers", 0, "image").(string)
	wantEq(t, "chart image by default", def, "ome-scheduler:v"+v)
	repo := func(image string) string { return strings.TrimSuffix(image, ":v"+v) }
	stamps := []string{"-X github.com/moirai-internal/ome-scheduler/internal/version.Version=v" + v,
		"-X k8s.io/component-base/version.gitVersion=" + kubeVersionOfMakefile(t)}

	cases := []struct {
		name      string
		args      []string
		want      []string // substrings of the ko command line
		wantAfter []string // substrings of later recipe lines
	}{
		{"image, both platforms, no push", nil,
			[]string{"KO_DOCKER_REPO=" + repo(def) + " ", "--platform linux/amd64,linux/arm64", "--push=false", "--oci-layout-path "},
			nil},
		{"image for HUB, one platform", []string{"HUB=" + hub + "/", "PLATFORMS=linux/arm64"},
			[]string{"KO_DOCKER_REPO=" + repo(img) + " ", "--platform linux/arm64", "--push=false"}, nil},
		{"publish", []string{"HUB=" + hub, "CHART_REPO=oci://registry.example.com/charts"},
			[]string{"KO_DOCKER_REPO=" + repo(img) + " ", "--platform linux/amd64,linux/arm64", "--image-refs "},
			[]string{"helm package charts/ome-scheduler --version " + v, "helm push ", "/ome-scheduler-" + v + ".tgz oci://registry.example.com/charts"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			target := "image"
			if strings.HasPrefix(tc.name, "publish") {
				target = "publish"
			}
			out := runMake(t, append([]string{"-n", target}, tc.args...)...)
			var ko string
			for _, l := range strings.Split(out, "\n") {
				if strings.Contains(l, "ko build ./cmd/ome-scheduler") {
					ko = l
				}
			}
			if ko == "" {
				t.Fatalf("make -n %s %v runs no ko build:\n%s", target, tc.args, out)
			}
			for _, w := range append(append(tc.want, "--bare --tags v"+v, "--image-user 65532:65532",
				"KO_DEFAULTBASEIMAGE=gcr.io/distroless/static:nonroot"), stamps...) {
				wantContains(t, "ko command of make -n "+target, ko, w)
			}
			if target == "image" && strings.Contains(ko, "--image-refs") {
				t.Errorf("make image must not push: %s", ko)
			}
			for _, w := range tc.wantAfter {
				wantContains(t, "make -n "+target, out, w)
			}
		})
	}
	if out, err := runMakeErr(t, "publish", "HUB="); err == nil || !strings.Contains(out, "make publish needs HUB") {
		t.Errorf("make publish without HUB/CHART_REPO: err %v, output:\n%s", err, out)
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
