package chart_test

import (
	"regexp"
	"strings"
	"testing"
)

// ---------------------------------------------------------------------------------------
// config.yaml variations: values that change the rendered scheduler configuration

func TestConfigVariations(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want func(t *testing.T) string
		// extra raw-line checks on the ConfigMap text
		lines []string
	}{
		{
			name: "percentageOfNodesToScore 100",
			args: []string{"--set", "scheduler.percentageOfNodesToScore=100"},
			want: func(t *testing.T) string {
				return replaceOnce(t, defaultConfig(t), "  - schedulerName: ome-scheduler\n",
					"  - schedulerName: ome-scheduler\n    percentageOfNodesToScore: 100\n")
			},
			lines: []string{"        percentageOfNodesToScore: 100"},
		},
		{
			name: "percentageOfNodesToScore 1",
			args: []string{"--set", "scheduler.percentageOfNodesToScore=1"},
			want: func(t *testing.T) string {
				return replaceOnce(t, defaultConfig(t), "  - schedulerName: ome-scheduler\n",
					"  - schedulerName: ome-scheduler\n    percentageOfNodesToScore: 1\n")
			},
			lines: []string{"        percentageOfNodesToScore: 1"},
		},
		{
			name: "fallback topologyKey",
			args: []string{"--set", "scheduler.plugin.topologyKey=nvidia.com/gpu.clique"},
			want: func(t *testing.T) string {
				return replaceOnce(t, defaultConfig(t), "        args:\n          podGroupTopologyKeyAnnotation:",
					"        args:\n          topologyKey: \"nvidia.com/gpu.clique\"\n          podGroupTopologyKeyAnnotation:")
			},
			lines: []string{`              topologyKey: "nvidia.com/gpu.clique"`},
		},
		{
			name: "preemption enabled",
			args: []string{"--set", "scheduler.disablePreemption=false"},
			want: func(t *testing.T) string {
				// DefaultPreemption stays disabled: it is blind to domains and gangs.
				return replaceOnce(t, defaultConfig(t), "          standaloneDomainPacking: true\n", "          standaloneDomainPacking: true\n          preemption: true\n")
			},
		},
		{
			name: "stock queue sort",
			args: []string{"--set", "scheduler.gangQueueSort=false"},
			want: func(t *testing.T) string {
				return replaceOnce(t, defaultConfig(t), "      queueSort:\n        enabled:\n          - name: OMEGangSort\n        disabled:\n          - name: PrioritySort\n", "")
			},
		},
		{
			name: "PodTopologySpread score enabled",
			args: []string{"--set", "scheduler.disablePodTopologySpreadScore=false"},
			want: func(t *testing.T) string {
				return replaceOnce(t, defaultConfig(t), "        disabled:\n          - name: PodTopologySpread\n", "")
			},
		},
		{
			name: "no NodeResourcesFit resources",
			args: []string{"--set-json", "scheduler.nodeResourcesFit.resources=[]"},
			want: func(t *testing.T) string {
				return replaceOnce(t, defaultConfig(t),
					"            resources:\n              - name: cpu\n                weight: 1\n              - name: memory\n                weight: 1\n", "")
			},
		},
		{
			name: "accelerator resource weights (W34)",
			args: []string{"--set-json", `scheduler.nodeResourcesFit.resources=[{"name":"nvidia.com/gpu","weight":10},{"name":"cpu","weight":1},{"name":"memory","weight":1}]`},
			want: func(t *testing.T) string {
				return replaceOnce(t, defaultConfig(t), "            resources:\n",
					"            resources:\n              - name: nvidia.com/gpu\n                weight: 10\n")
			},
		},
		{
			name: "leaderElect false with one replica",
			args: []string{"--set", "scheduler.leaderElect=false", "--set", "scheduler.replicaCount=1", "--set", "scheduler.podDisruptionBudget.minAvailable=0"},
			want: func(t *testing.T) string {
				return replaceOnce(t, defaultConfig(t), "  leaderElect: true\n", "  leaderElect: false\n")
			},
			lines: []string{"      resourceName: ome-scheduler", "      resourceNamespace: ome"},
		},
		{
			name: "generic producer annotation (§7.7)",
			args: []string{"--set", "scheduler.omeControllerIntegration.enabled=false", "--set", "scheduler.plugin.podGroupTopologyKeyAnnotation=example.com/topology-key"},
			want: func(t *testing.T) string {
				return replaceOnce(t, defaultConfig(t), `podGroupTopologyKeyAnnotation: "ome.io/topology-key"`, `podGroupTopologyKeyAnnotation: "example.com/topology-key"`)
			},
			lines: []string{`              podGroupTopologyKeyAnnotation: "example.com/topology-key"`},
		},
		{
			name: "fail-closed placement-group check on, partner groups off",
			args: []string{"--set", "scheduler.plugin.unsupportedPlacementGroupLabel=ome.io/placement-group", "--set", "scheduler.plugin.placementGroupLabel="},
			want: func(t *testing.T) string {
				c := replaceOnce(t, defaultConfig(t), `unsupportedPlacementGroupLabel: ""`, `unsupportedPlacementGroupLabel: "ome.io/placement-group"`)
				return replaceOnce(t, c, `placementGroupLabel: "ome.io/placement-group"`, `placementGroupLabel: ""`)
			},
		},
		{
			name: "partner placement groups under another label",
			args: []string{"--set", "scheduler.plugin.placementGroupLabel=example.com/partners"},
			want: func(t *testing.T) string {
				return replaceOnce(t, defaultConfig(t), `placementGroupLabel: "ome.io/placement-group"`, `placementGroupLabel: "example.com/partners"`)
			},
			lines: []string{`              placementGroupLabel: "example.com/partners"`},
		},
		{
			name: "integer and boolean args bare",
			args: []string{
				"--set", "scheduler.plugin.defaultPermitTimeoutSeconds=120",
				"--set", "scheduler.plugin.podGroupSyncTimeoutSeconds=15",
				"--set", "scheduler.plugin.gcIntervalSeconds=5",
				"--set", "scheduler.plugin.standaloneDomainPacking=false",
				"--set", "scheduler.omeGangPack.scoreWeight=1000000",
				"--set", "scheduler.nodeResourcesFit.scoreWeight=3",
			},
			want: func(t *testing.T) string {
				s := replaceOnce(t, defaultConfig(t), "defaultPermitTimeoutSeconds: 600", "defaultPermitTimeoutSeconds: 120")
				s = replaceOnce(t, s, "podGroupSyncTimeoutSeconds: 30", "podGroupSyncTimeoutSeconds: 15")
				s = replaceOnce(t, s, "gcIntervalSeconds: 60", "gcIntervalSeconds: 5")
				s = replaceOnce(t, s, "standaloneDomainPacking: true", "standaloneDomainPacking: false")
				s = replaceOnce(t, s, "          - name: OMEGangPack\n            weight: 10\n", "          - name: OMEGangPack\n            weight: 1000000\n")
				return replaceOnce(t, s, "          - name: NodeResourcesFit\n            weight: 10\n", "          - name: NodeResourcesFit\n            weight: 3\n")
			},
		},
		{
			name: "gangSoftSpread false is rendered, true is not",
			args: []string{"--set", "scheduler.plugin.gangSoftSpread=false"},
			want: func(t *testing.T) string {
				return replaceOnce(t, defaultConfig(t), "          standaloneDomainPacking: true\n", "          standaloneDomainPacking: true\n          gangSoftSpread: false\n")
			},
		},
		{
			name: "allowed topology keys and the per-namespace hold cap",
			args: []string{"--set", "scheduler.plugin.allowedTopologyKeys={nvidia.com/gpu.clique,example.com/rack}", "--set", "scheduler.plugin.maxHoldsPerNamespace=3"},
			want: func(t *testing.T) string {
				return replaceOnce(t, defaultConfig(t), "          standaloneDomainPacking: true\n", "          standaloneDomainPacking: true\n          allowedTopologyKeys:\n            - \"nvidia.com/gpu.clique\"\n            - \"example.com/rack\"\n          maxHoldsPerNamespace: 3\n")
			},
		},
		{
			name: "bind window off (0) is rendered; null (the default) is not",
			args: []string{"--set", "scheduler.plugin.bindWindowMilliseconds=0"},
			want: func(t *testing.T) string {
				return replaceOnce(t, defaultConfig(t), "          standaloneDomainPacking: true\n", "          standaloneDomainPacking: true\n          bindWindowMilliseconds: 0\n")
			},
		},
		{
			name: "placement labels are rendered when set; null (the default) is not",
			args: []string{"--set", "scheduler.plugin.placementLabels={nvidia.com/gpu.clique,example.com/row}"},
			want: func(t *testing.T) string {
				return replaceOnce(t, defaultConfig(t), "          standaloneDomainPacking: true\n", "          standaloneDomainPacking: true\n          placementLabels:\n            - \"nvidia.com/gpu.clique\"\n            - \"example.com/row\"\n")
			},
		},
		{
			name: "no placement labels ([]) is rendered as such",
			args: []string{"--set-json", "scheduler.plugin.placementLabels=[]"},
			want: func(t *testing.T) string {
				return replaceOnce(t, defaultConfig(t), "          standaloneDomainPacking: true\n", "          standaloneDomainPacking: true\n          placementLabels: []\n")
			},
		},
		{
			name: "domain preferences None is rendered; NodeAffinity (the default) is not",
			args: []string{"--set", "scheduler.plugin.domainPreferences=None"},
			want: func(t *testing.T) string {
				return replaceOnce(t, defaultConfig(t), "          standaloneDomainPacking: true\n", "          standaloneDomainPacking: true\n          domainPreferences: None\n")
			},
		},
		{
			name: "domain preferences NodeAffinity renders the default configuration",
			args: []string{"--set", "scheduler.plugin.domainPreferences=NodeAffinity"},
			want: defaultConfig,
		},
		{
			name: "profiling on",
			args: []string{"--set", "scheduler.enableProfiling=true"},
			want: func(t *testing.T) string {
				return replaceOnce(t, defaultConfig(t), "enableProfiling: false\n", "enableProfiling: true\n")
			},
			lines: []string{"    enableProfiling: true", "    enableContentionProfiling: false"},
		},
		{
			name: "profiling and contention profiling on",
			args: []string{"--set", "scheduler.enableProfiling=true", "--set", "scheduler.enableContentionProfiling=true"},
			want: func(t *testing.T) string {
				s := replaceOnce(t, defaultConfig(t), "enableProfiling: false\n", "enableProfiling: true\n")
				return replaceOnce(t, s, "enableContentionProfiling: false\n", "enableContentionProfiling: true\n")
			},
		},
		{
			name: "profiling values removed still render false",
			args: []string{"--set", "scheduler.enableProfiling=null", "--set", "scheduler.enableContentionProfiling=null"},
			want: defaultConfig,
		},
		{
			name: "client rate limit",
			args: []string{"--set", "scheduler.clientConnection.qps=75", "--set", "scheduler.clientConnection.burst=150"},
			want: func(t *testing.T) string {
				return replaceOnce(t, defaultConfig(t), "clientConnection:\n  qps: 200\n  burst: 400\n", "clientConnection:\n  qps: 75\n  burst: 150\n")
			},
			lines: []string{"    clientConnection:", "      qps: 75", "      burst: 150"},
		},
		{
			name: "fractional client QPS",
			args: []string{"--set-json", "scheduler.clientConnection.qps=12.5"},
			want: func(t *testing.T) string {
				return replaceOnce(t, defaultConfig(t), "  qps: 200\n", "  qps: 12.5\n")
			},
			lines: []string{"      qps: 12.5", "      burst: 400"},
		},
		{
			name: "client rate limit from a values file stays integer",
			args: []string{"-f", "VALUES:scheduler:\n  clientConnection:\n    qps: 1000000\n    burst: 2000000\n"},
			want: func(t *testing.T) string {
				return replaceOnce(t, defaultConfig(t), "clientConnection:\n  qps: 200\n  burst: 400\n", "clientConnection:\n  qps: 1000000\n  burst: 2000000\n")
			},
		},
		{
			name: "client rate limit removed: kube-scheduler's defaults",
			args: []string{"--set", "scheduler.clientConnection=null"},
			want: func(t *testing.T) string {
				return replaceOnce(t, defaultConfig(t), "clientConnection:\n  qps: 200\n  burst: 400\n", "")
			},
		},
		{
			name: "integers from a values file stay integers",
			args: []string{"-f", "VALUES:scheduler:\n  omeGangPack:\n    scoreWeight: 1000000\n  percentageOfNodesToScore: 100\n"},
			want: func(t *testing.T) string {
				s := replaceOnce(t, defaultConfig(t), "          - name: OMEGangPack\n            weight: 10\n", "          - name: OMEGangPack\n            weight: 1000000\n")
				return replaceOnce(t, s, "  - schedulerName: ome-scheduler\n", "  - schedulerName: ome-scheduler\n    percentageOfNodesToScore: 100\n")
			},
		},
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
			got := configYAML(t, r, "ome-scheduler")
			want := tc.want(t)
			if got != want {
				t.Errorf("config.yaml mismatch\n--- got:\n%s\n--- want:\n%s", got, want)
			}
			cm := r.get(t, "ConfigMap", "ome-scheduler-config")
			for _, l := range tc.lines {
				wantLine(t, "ConfigMap", cm.text, l)
			}
		})
	}
}

// ---------------------------------------------------------------------------------------
// Checksum-driven rollout: every configuration value changes the pod template's checksum

func TestChecksum(t *testing.T) {
	base := checksum(t, render(t), "ome-scheduler")
	changes := []struct {
		name string
		args []string
	}{
		{"topologyKey", []string{"--set", "scheduler.plugin.topologyKey=nvidia.com/gpu.clique"}},
		{"podGroupTopologyKeyAnnotation", []string{"--set", "scheduler.omeControllerIntegration.enabled=false", "--set", "scheduler.plugin.podGroupTopologyKeyAnnotation=example.com/topology-key"}},
		{"unsupportedPlacementGroupLabel", []string{"--set", "scheduler.plugin.unsupportedPlacementGroupLabel=example.com/pg"}},
		{"placementGroupLabel", []string{"--set", "scheduler.plugin.placementGroupLabel=example.com/partners"}},
		{"defaultPermitTimeoutSeconds", []string{"--set", "scheduler.plugin.defaultPermitTimeoutSeconds=120"}},
		{"podGroupSyncTimeoutSeconds", []string{"--set", "scheduler.plugin.podGroupSyncTimeoutSeconds=31"}},
		{"gcIntervalSeconds", []string{"--set", "scheduler.plugin.gcIntervalSeconds=61"}},
		{"standaloneDomainPacking", []string{"--set", "scheduler.plugin.standaloneDomainPacking=false"}},
		{"OMEGangPack weight", []string{"--set", "scheduler.omeGangPack.scoreWeight=11"}},
		{"NodeResourcesFit weight", []string{"--set", "scheduler.nodeResourcesFit.scoreWeight=11"}},
		{"NodeResourcesFit resources", []string{"--set-json", `scheduler.nodeResourcesFit.resources=[{"name":"cpu","weight":2},{"name":"memory","weight":1}]`}},
		{"percentageOfNodesToScore", []string{"--set", "scheduler.percentageOfNodesToScore=100"}},
		{"preemption switch", []string{"--set", "scheduler.disablePreemption=false"}},
		{"PodTopologySpread score switch", []string{"--set", "scheduler.disablePodTopologySpreadScore=false"}},
		{"leaderElect", []string{"--set", "scheduler.leaderElect=false", "--set", "scheduler.replicaCount=1", "--set", "scheduler.podDisruptionBudget.enabled=false"}},
		{"enableProfiling", []string{"--set", "scheduler.enableProfiling=true"}},
		{"enableContentionProfiling", []string{"--set", "scheduler.enableContentionProfiling=true"}},
		{"client QPS", []string{"--set", "scheduler.clientConnection.qps=100"}},
		{"client burst", []string{"--set", "scheduler.clientConnection.burst=200"}},
	}
	for _, tc := range changes {
		t.Run("changes with "+tc.name, func(t *testing.T) {
			t.Parallel()
			r := render(t, tc.args...)
			got := checksum(t, r, "ome-scheduler")
			if got == base {
				t.Errorf("checksum/config unchanged (%s) after changing %s", got, tc.name)
			}
			cm := r.get(t, "ConfigMap", "ome-scheduler-config")
			wantEq(t, "checksum/config", got, sha256Hex(strings.TrimSpace(cm.text)+"\n"))
		})
	}
	same := []struct {
		name string
		args []string
	}{
		{"podAnnotations", []string{"--set", "scheduler.podAnnotations.example\\.com/team=sched"}},
		{"verbosity", []string{"--set", "scheduler.verbosity=4"}},
		{"featureGates", []string{"--set", "scheduler.featureGates.NominatedNodeNameForExpectation=false"}},
		{"resources", []string{"--set", "scheduler.resources.requests.memory=1Gi"}},
		{"replicaCount", []string{"--set", "scheduler.replicaCount=3"}},
		{"priorityClassName", []string{"--set", "scheduler.priorityClassName=other"}},
		{"metrics TLS Secret", []string{"--set", "scheduler.metrics.tls.secretName=sched-tls"}},
		{"probes", []string{"--set", "scheduler.probes.liveness.timeoutSeconds=9", "--set", "scheduler.probes.startup.enabled=false"}},
		{"image digest", []string{"--set", "scheduler.image.digest=" + testDigest}},
	}
	for _, tc := range same {
		t.Run("unchanged with "+tc.name, func(t *testing.T) {
			t.Parallel()
			got := checksum(t, render(t, tc.args...), "ome-scheduler")
			if got != base {
				t.Errorf("checksum/config changed (%s → %s) after changing only %s", base, got, tc.name)
			}
		})
	}
	t.Run("podAnnotations follow checksum", func(t *testing.T) {
		t.Parallel()
		r := render(t, "--set", "scheduler.podAnnotations.example\\.com/team=sched", "--set", "scheduler.podAnnotations.checksum/config=override")
		d := r.get(t, "Deployment", "ome-scheduler")
		wantEq(t, "pod annotations", dig(d.obj, "spec", "template", "metadata", "annotations"), map[string]any{
			"checksum/config":  base,
			"example.com/team": "sched",
		})
		re := regexp.MustCompile(`(?m)^      annotations:\n        checksum/config: [0-9a-f]{64}\n        example\.com/team: sched\n`)
		if !re.MatchString(d.text) {
			t.Errorf("podAnnotations are not rendered directly after checksum/config:\n%s", d.text)
		}
	})
}
