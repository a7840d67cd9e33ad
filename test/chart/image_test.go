package chart_test

import (
	"strings"
	"testing"
)

// ---------------------------------------------------------------------------------------
// Image reference: hub, repository, tag (default appVersion), digest, pull policy

const testDigest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func TestImageReference(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"defaults: the tag is the chart's appVersion", nil, "ome-scheduler:{appVersion}"},
		{"explicit empty tag", []string{"--set", "scheduler.image.tag="}, "ome-scheduler:{appVersion}"},
		{"hub and tag (W1)", []string{"--set", "global.hub=registry.example.com/ome", "--set", "scheduler.image.tag=v1.3.0"}, "registry.example.com/ome/ome-scheduler:v1.3.0"},
		{"hub with trailing slash", []string{"--set", "global.hub=registry.example.com/ome/", "--set", "scheduler.image.tag=v1.3.0"}, "registry.example.com/ome/ome-scheduler:v1.3.0"},
		{"repository with a slash ignores hub", []string{"--set", "global.hub=registry.example.com/ome", "--set", "scheduler.image.repository=quay.io/acme/ome-scheduler", "--set", "scheduler.image.tag=v1.3.0"}, "quay.io/acme/ome-scheduler:v1.3.0"},
		{"repository with a slash without hub", []string{"--set", "scheduler.image.repository=ghcr.io/acme/sched"}, "ghcr.io/acme/sched:{appVersion}"},
		{"numeric-looking tag", []string{"-f", "VALUES:scheduler:\n  image:\n    tag: 1.30\n"}, "ome-scheduler:1.3"},
		{"digest", []string{"--set", "scheduler.image.digest=" + testDigest}, "ome-scheduler@" + testDigest},
		{"digest wins over the tag", []string{"--set", "scheduler.image.tag=v1.3.0", "--set", "scheduler.image.digest=" + testDigest}, "ome-scheduler@" + testDigest},
		{"digest with hub", []string{"--set", "global.hub=registry.example.com/ome", "--set", "scheduler.image.digest=" + testDigest}, "registry.example.com/ome/ome-scheduler@" + testDigest},
		{"digest with a full repository", []string{"--set", "scheduler.image.repository=quay.io/acme/ome-scheduler", "--set", "scheduler.image.digest=" + testDigest}, "quay.io/acme/ome-scheduler@" + testDigest},
	}
	_, appVersion := chartMeta(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			args := make([]string, len(tc.args))
			for i, a := range tc.args {
				if v, ok := strings.CutPrefix(a, "VALUES:"); ok {
					a = writeValues(t, v)
				}
				args[i] = a
			}
			r := render(t, args...)
			d := r.get(t, "Deployment", "ome-scheduler")
			want := strings.ReplaceAll(tc.want, "{appVersion}", appVersion)
			wantEq(t, "image", dig(d.obj, "spec", "template", "spec", "containers", 0, "image"), want)
		})
	}
	t.Run("W1 values file from the walkthrough", func(t *testing.T) {
		t.Parallel()
		f := writeValues(t, "global:\n  hub: registry.example.com/ome\nscheduler:\n  image:\n    tag: v1.3.0\n")
		res := template(t, "-f", f)
		if res.err != nil {
			t.Fatalf("render failed: %v\n%s", res.err, res.stderr)
		}
		wantLine(t, "render", res.stdout, "        image: registry.example.com/ome/ome-scheduler:v1.3.0")
		wantLine(t, "render", res.stdout, "      - schedulerName: ome-scheduler")
	})
}

func TestImagePullPolicy(t *testing.T) {
	for _, p := range []string{"Always", "IfNotPresent", "Never"} {
		t.Run(p, func(t *testing.T) {
			t.Parallel()
			r := render(t, "--set", "scheduler.image.pullPolicy="+p)
			d := r.get(t, "Deployment", "ome-scheduler")
			wantEq(t, "imagePullPolicy", dig(d.obj, "spec", "template", "spec", "containers", 0, "imagePullPolicy"), p)
		})
	}
}
