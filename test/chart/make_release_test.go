package chart_test

import (
	"regexp"
	"strings"
	"testing"
)

// `make release` (docs/install.md section 2, .github/workflows/release.yml) builds the image
// with ko on the base pinned by digest, with ko's SPDX SBOM, pushes it and the chart, signs both
// with cosign (with COSIGN_KEY, or keyless), and builds kubectl-ome for the four platforms the
// krew manifest lists. The recipe is checked here with make -n; test/e2e TestRelease runs it
// against a registry.
func TestMakeRelease(t *testing.T) {
	v := releaseVersion(t)
	args := []string{"-n", "release", "HUB=registry.example.com/ome", "CHART_REPO=oci://registry.example.com/charts/"}
	out := runMake(t, append(args, "COSIGN_KEY=cosign.key", "COSIGN_TLOG=false")...)
	var ko string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "ko build ./cmd/ome-scheduler") {
			ko = l
		}
	}
	if !regexp.MustCompile(`KO_DEFAULTBASEIMAGE=gcr\.io/distroless/static:nonroot@sha256:[0-9a-f]{64} `).MatchString(ko) {
		t.Errorf("make release's ko build does not use the distroless base pinned by digest: %s", ko)
	}
	for _, w := range []string{"KO_DOCKER_REPO=registry.example.com/ome/ome-scheduler ", "--platform linux/amd64,linux/arm64",
		"--sbom spdx", "--image-refs ", "/release/image-ref", "--image-user 65532:65532", "--tags v" + v} {
		wantContains(t, "ko command of make -n release", ko, w)
	}
	for _, w := range []string{
		"helm push ", "/release/ome-scheduler-" + v + ".tgz oci://registry.example.com/charts/",
		"crane digest registry.example.com/charts/ome-scheduler:" + v,
		"cosign sign --yes --key cosign.key --use-signing-config=false --tlog-upload=false $(cat ",
		"--recursive $(cat ", "/release/image-ref)", "/release/chart-ref)",
		"for p in linux/amd64 linux/arm64 darwin/amd64 darwin/arm64;", "./cmd/kubectl-ome",
		"run ./hack/release -dist ", "-version v" + v,
		"-url https://github.com/moirai-internal/ome-scheduler/releases/download/v" + v,
	} {
		wantContains(t, "make -n release", out, w)
	}
	if n := strings.Count(out, "cosign sign "); n != 2 {
		t.Errorf("make -n release signs %d times, want 2 (image and chart):\n%s", n, out)
	}
	// Keyless by default: no --key, the transparency log on.
	out = runMake(t, args...)
	if strings.Contains(out, "--key") || strings.Contains(out, "--tlog-upload") || strings.Count(out, "cosign sign --yes ") != 2 {
		t.Errorf("make -n release without COSIGN_KEY: want keyless signing with the transparency log:\n%s", out)
	}
	if out, err := runMakeErr(t, "release", "HUB="); err == nil || !strings.Contains(out, "make release needs HUB") {
		t.Errorf("make release without HUB/CHART_REPO: err %v, output:\n%s", err, out)
	}
}
