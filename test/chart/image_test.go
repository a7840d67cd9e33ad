package chart_test

import (
	"strings"
	"testing"
)

// ---------------------------------------------------------------------------------------
// W1 image reference

func TestImageReference(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"defaults", nil, "ome-scheduler:latest"},
		{"hub and tag (W1)", []string{"--set", "global.hub=registry.example.com/ome", "--set", "scheduler.image.tag=v1.3.0"}, "registry.example.com/ome/ome-scheduler:v1.3.0"},
		{"hub with trailing slash", []string{"--set", "global.hub=registry.example.com/ome/", "--set", "scheduler.image.tag=v1.3.0"}, "registry.example.com/ome/ome-scheduler:v1.3.0"},
		{"repository with a slash ignores hub", []string{"--set", "global.hub=registry.example.com/ome", "--set", "scheduler.image.repository=quay.io/acme/ome-scheduler", "--set", "scheduler.image.tag=v1.3.0"}, "quay.io/acme/ome-scheduler:v1.3.0"},
		{"repository with a slash without hub", []string{"--set", "scheduler.image.repository=ghcr.io/acme/sched"}, "ghcr.io/acme/sched:latest"},
		{"numeric-looking tag", []string{"-f", "VALUES:scheduler:\n  image:\n    tag: 1.30\n"}, "ome-scheduler:1.3"},
	}
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
			wantEq(t, "image", dig(d.obj, "spec", "template", "spec", "containers", 0, "image"), tc.want)
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
