package main

import (
	"archive/tar"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeDist lays out dist as make release leaves it before hack/release runs: a kubectl-ome per
// platform and the packaged chart.
func fakeDist(t *testing.T, platforms []string) (dist, license string) {
	t.Helper()
	dist = t.TempDir()
	for _, p := range platforms {
		dir := filepath.Join(dist, "kubectl-ome-"+strings.ReplaceAll(p, "/", "-"))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "kubectl-ome"), []byte("binary for "+p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	license = filepath.Join(dist, "LICENSE.txt")
	for name, body := range map[string]string{license: "license", filepath.Join(dist, "ome-scheduler-1.3.0.tgz"): "chart"} {
		if err := os.WriteFile(name, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dist, license
}

// TestRun checks the archives (kubectl-ome executable and LICENSE, in that order), SHA256SUMS
// (every archive and the chart) and the krew manifest (a platform per archive with its sum),
// and that a second run over the same binaries gives the same sums.
func TestRun(t *testing.T) {
	platforms := []string{"linux/amd64", "darwin/arm64"}
	dist, license := fakeDist(t, platforms)
	if err := run(dist, "v1.3.0", "https://example.com/dl", platforms, license); err != nil {
		t.Fatal(err)
	}
	sums, err := os.ReadFile(filepath.Join(dist, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	manifest, err := os.ReadFile(filepath.Join(dist, "plugins", "ome.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(sums)), "\n")
	if len(lines) != 3 || !strings.HasSuffix(lines[2], "  ome-scheduler-1.3.0.tgz") {
		t.Fatalf("SHA256SUMS:\n%s", sums)
	}
	for _, l := range lines[:2] {
		sum, name, _ := strings.Cut(l, "  ")
		if !strings.Contains(string(manifest), "uri: https://example.com/dl/"+name+"\n    sha256: "+sum+"\n") {
			t.Errorf("the manifest has no platform for %s with sha256 %s:\n%s", name, sum, manifest)
		}
	}
	for _, want := range []string{"kind: Plugin", "name: ome", "version: v1.3.0", "os: linux", "arch: amd64", "os: darwin", "arch: arm64", "bin: kubectl-ome"} {
		if !strings.Contains(string(manifest), want) {
			t.Errorf("manifest lacks %q:\n%s", want, manifest)
		}
	}
	checkArchive(t, filepath.Join(dist, "kubectl-ome_v1.3.0_linux_amd64.tar.gz"), "binary for linux/amd64")
	if err := run(dist, "v1.3.0", "https://example.com/dl", platforms, license); err != nil {
		t.Fatal(err)
	}
	if again, _ := os.ReadFile(filepath.Join(dist, "SHA256SUMS")); string(again) != string(sums) {
		t.Errorf("a second run changed the sums:\n%s\nthen\n%s", sums, again)
	}
}

func checkArchive(t *testing.T, path, binary string) {
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
	var got []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		got = append(got, h.Name)
		if h.Name == "kubectl-ome" && (h.Mode != 0o755 || string(b) != binary) {
			t.Errorf("kubectl-ome in %s: mode %o, content %q", path, h.Mode, b)
		}
	}
	if strings.Join(got, ",") != "LICENSE,kubectl-ome" {
		t.Errorf("%s holds %v, want LICENSE and kubectl-ome", path, got)
	}
}
