package chart_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// ---------------------------------------------------------------------------------------
// Render refusals: value combinations the templates refuse with a message

func TestRenderRefusals(t *testing.T) {
	const (
		msgLeader = "scheduler.leaderElect must be true when scheduler.replicaCount is greater than 1"
		msgAnnot  = "scheduler.plugin.podGroupTopologyKeyAnnotation must be ome.io/topology-key when scheduler.omeControllerIntegration.enabled is true; disable OME controller integration for generic producers"
		msgPDB    = "scheduler.podDisruptionBudget.minAvailable must be less than scheduler.replicaCount so voluntary maintenance can make progress"
		msgSM     = "scheduler.metrics.serviceMonitor.enabled requires scheduler.metrics.service.enabled \u2014 the ServiceMonitor selects the metrics Service"
		msgCA     = "scheduler.metrics.serviceMonitor.ca: set secret.name or configMap.name, not both"
	)
	cases := []struct {
		name     string
		args     []string
		template string
		msg      string
	}{
		{"replicaCount 2 without leader election (W9)", []string{"--set", "scheduler.replicaCount=2", "--set", "scheduler.leaderElect=false"}, "deployment.yaml", msgLeader},
		{"replicaCount 3 without leader election", []string{"--set", "scheduler.replicaCount=3", "--set", "scheduler.leaderElect=false"}, "deployment.yaml", msgLeader},
		{"foreign annotation with OME integration", []string{"--set", "scheduler.plugin.podGroupTopologyKeyAnnotation=example.com/topology-key"}, "deployment.yaml", msgAnnot},
		{"replicaCount 1 with minAvailable 1", []string{"--set", "scheduler.replicaCount=1", "--set", "scheduler.podDisruptionBudget.minAvailable=1"}, "pdb.yaml", msgPDB},
		{"replicaCount 1 only (W8)", []string{"--set", "scheduler.replicaCount=1"}, "pdb.yaml", msgPDB},
		{"minAvailable above replicaCount", []string{"--set", "scheduler.replicaCount=3", "--set", "scheduler.podDisruptionBudget.minAvailable=5"}, "pdb.yaml", msgPDB},
		{"ServiceMonitor without Service (W43)", []string{"--set", "scheduler.metrics.serviceMonitor.enabled=true", "--set", "scheduler.metrics.service.enabled=false"}, "servicemonitor.yaml", msgSM},
		{"ServiceMonitor CA from a Secret and a ConfigMap", []string{"--set", "scheduler.metrics.serviceMonitor.enabled=true", "--set", "scheduler.metrics.serviceMonitor.ca.secret.name=a", "--set", "scheduler.metrics.serviceMonitor.ca.configMap.name=b"}, "servicemonitor.yaml", msgCA},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res := template(t, tc.args...)
			if res.err == nil {
				t.Fatalf("render succeeded; want failure %q", tc.msg)
			}
			found := false
			for _, l := range lines(res.stderr) {
				if strings.HasSuffix(l, "): "+tc.msg) && strings.Contains(l, "templates/"+tc.template) {
					found = true
				}
			}
			if !found {
				t.Errorf("stderr lacks a line from templates/%s ending with %q:\n%s", tc.template, tc.msg, res.stderr)
			}
		})
	}
	t.Run("ServiceMonitor message uses an em dash", func(t *testing.T) {
		if !strings.Contains(msgSM, "\u2014") || strings.Contains(msgSM, " - the") {
			t.Fatal("test constant lost its em dash")
		}
	})
}

// ---------------------------------------------------------------------------------------
// values.schema.json rejections and acceptances, and the chart's kubeVersion range

func TestSchemaRejections(t *testing.T) {
	const schemaErr = "values don't meet the specifications of the schema"
	cases := []struct {
		name   string
		args   []string
		path   string // JSON pointer named in Helm's schema error
		detail string // optional further text of the schema error
	}{
		{"percentageOfNodesToScore 0", []string{"--set", "scheduler.percentageOfNodesToScore=0"}, "/scheduler/percentageOfNodesToScore", "minimum: got 0, want 1"},
		{"percentageOfNodesToScore 101", []string{"--set", "scheduler.percentageOfNodesToScore=101"}, "/scheduler/percentageOfNodesToScore", "maximum: got 101, want 100"},
		{"percentageOfNodesToScore string", []string{"--set-string", "scheduler.percentageOfNodesToScore=50"}, "/scheduler/percentageOfNodesToScore", ""},
		{"name Invalid_Name", []string{"--set", "scheduler.name=Invalid_Name"}, "/scheduler/name", "does not match pattern"},
		{"name of 56 characters", []string{"--set", "scheduler.name=" + strings.Repeat("a", 56)}, "/scheduler/name", "maxLength"},
		{"name ending with a dash", []string{"--set", "scheduler.name=ome-"}, "/scheduler/name", ""},
		{"empty name", []string{"--set", "scheduler.name="}, "/scheduler/name", ""},
		{"replicaCount 0", []string{"--set", "scheduler.replicaCount=0"}, "/scheduler/replicaCount", ""},
		{"leaderElect not boolean", []string{"--set-string", "scheduler.leaderElect=true"}, "/scheduler/leaderElect", ""},
		{"integration enabled not boolean", []string{"--set-string", "scheduler.omeControllerIntegration.enabled=yes"}, "/scheduler/omeControllerIntegration/enabled", ""},
		{"integration without enabled", []string{"--set", "scheduler.omeControllerIntegration.enabled=null"}, "/scheduler/omeControllerIntegration", "missing property 'enabled'"},
		{"strategy Recreate", []string{"--set", "scheduler.deploymentStrategy.type=Recreate"}, "/scheduler/deploymentStrategy/type", ""},
		{"maxSurge negative", []string{"--set", "scheduler.deploymentStrategy.rollingUpdate.maxSurge=-1"}, "/scheduler/deploymentStrategy/rollingUpdate/maxSurge", ""},
		{"maxUnavailable negative", []string{"--set", "scheduler.deploymentStrategy.rollingUpdate.maxUnavailable=-1"}, "/scheduler/deploymentStrategy/rollingUpdate/maxUnavailable", ""},
		{"topologyKey removed", []string{"--set", "scheduler.plugin.topologyKey=null"}, "/scheduler/plugin", "missing property 'topologyKey'"},
		{"topologyKey not a string", []string{"--set", "scheduler.plugin.topologyKey=5"}, "/scheduler/plugin/topologyKey", ""},
		{"empty annotation name", []string{"--set", "scheduler.omeControllerIntegration.enabled=false", "--set", "scheduler.plugin.podGroupTopologyKeyAnnotation="}, "/scheduler/plugin/podGroupTopologyKeyAnnotation", ""},
		{"defaultPermitTimeoutSeconds 0", []string{"--set", "scheduler.plugin.defaultPermitTimeoutSeconds=0"}, "/scheduler/plugin/defaultPermitTimeoutSeconds", ""},
		{"podGroupSyncTimeoutSeconds 0", []string{"--set", "scheduler.plugin.podGroupSyncTimeoutSeconds=0"}, "/scheduler/plugin/podGroupSyncTimeoutSeconds", ""},
		{"gcIntervalSeconds 0", []string{"--set", "scheduler.plugin.gcIntervalSeconds=0"}, "/scheduler/plugin/gcIntervalSeconds", "minimum: got 0, want 1"},
		{"standaloneDomainPacking not boolean", []string{"--set-string", "scheduler.plugin.standaloneDomainPacking=false"}, "/scheduler/plugin/standaloneDomainPacking", ""},
		{"OMEGangPack weight 0", []string{"--set", "scheduler.omeGangPack.scoreWeight=0"}, "/scheduler/omeGangPack/scoreWeight", ""},
		{"OMEGangPack weight 1000001", []string{"--set", "scheduler.omeGangPack.scoreWeight=1000001"}, "/scheduler/omeGangPack/scoreWeight", ""},
		{"NodeResourcesFit score weight 0", []string{"--set", "scheduler.nodeResourcesFit.scoreWeight=0"}, "/scheduler/nodeResourcesFit/scoreWeight", ""},
		{"NodeResourcesFit resource weight 101 (W34)", []string{"--set-json", `scheduler.nodeResourcesFit.resources=[{"name":"nvidia.com/gpu","weight":101}]`}, "/scheduler/nodeResourcesFit/resources/0/weight", "maximum: got 101, want 100"},
		{"NodeResourcesFit resource weight 0", []string{"--set-json", `scheduler.nodeResourcesFit.resources=[{"name":"cpu","weight":0}]`}, "/scheduler/nodeResourcesFit/resources/0/weight", ""},
		{"NodeResourcesFit resource without name", []string{"--set-json", `scheduler.nodeResourcesFit.resources=[{"name":"","weight":1}]`}, "/scheduler/nodeResourcesFit/resources/0/name", ""},
		{"empty bindAddress", []string{"--set", "scheduler.metrics.bindAddress="}, "/scheduler/metrics/bindAddress", ""},
		{"securePort 0", []string{"--set", "scheduler.metrics.securePort=0"}, "/scheduler/metrics/securePort", ""},
		{"securePort 65536", []string{"--set", "scheduler.metrics.securePort=65536"}, "/scheduler/metrics/securePort", ""},
		{"service type ExternalName", []string{"--set", "scheduler.metrics.service.type=ExternalName"}, "/scheduler/metrics/service/type", ""},
		{"service port 70000", []string{"--set", "scheduler.metrics.service.port=70000"}, "/scheduler/metrics/service/port", ""},
		{"service enabled not boolean", []string{"--set-string", "scheduler.metrics.service.enabled=true"}, "/scheduler/metrics/service/enabled", ""},
		{"liveness path without slash", []string{"--set", "scheduler.probes.liveness.path=healthz"}, "/scheduler/probes/liveness/path", ""},
		{"readiness path without slash", []string{"--set", "scheduler.probes.readiness.path=readyz"}, "/scheduler/probes/readiness/path", ""},
		{"liveness initialDelaySeconds negative", []string{"--set", "scheduler.probes.liveness.initialDelaySeconds=-1"}, "/scheduler/probes/liveness/initialDelaySeconds", ""},
		{"liveness periodSeconds 0", []string{"--set", "scheduler.probes.liveness.periodSeconds=0"}, "/scheduler/probes/liveness/periodSeconds", ""},
		{"readiness initialDelaySeconds negative", []string{"--set", "scheduler.probes.readiness.initialDelaySeconds=-1"}, "/scheduler/probes/readiness/initialDelaySeconds", ""},
		{"PDB enabled not boolean", []string{"--set-string", "scheduler.podDisruptionBudget.enabled=true"}, "/scheduler/podDisruptionBudget/enabled", ""},
		{"PDB minAvailable negative", []string{"--set", "scheduler.podDisruptionBudget.minAvailable=-1"}, "/scheduler/podDisruptionBudget/minAvailable", ""},
		{"affinity not an object", []string{"--set-json", `scheduler.affinity=[]`}, "/scheduler/affinity", ""},
		{"topologySpreadConstraints items not objects", []string{"--set-json", `scheduler.topologySpreadConstraints=["x"]`}, "/scheduler/topologySpreadConstraints/0", ""},
		{"scheduler removed", []string{"--set", "scheduler=null"}, "", "missing property 'scheduler'"},
		// values whose schema entry rejects a wrong type or shape
		{"global.hub not a string", []string{"--set", "global.hub=5"}, "/global/hub", "got number, want string"},
		{"pull secret as a string", []string{"--set-json", `scheduler.imagePullSecrets=["regcred"]`}, "/scheduler/imagePullSecrets/0", "got string, want object"},
		{"global pull secret without name", []string{"--set-json", `global.imagePullSecrets=[{"nme":"regcred"}]`}, "/global/imagePullSecrets/0", ""},
		{"verbosity negative", []string{"--set", "scheduler.verbosity=-1"}, "/scheduler/verbosity", "minimum: got -1, want 0"},
		{"verbosity as a string", []string{"--set-string", "scheduler.verbosity=4"}, "/scheduler/verbosity", "got string, want integer"},
		{"disablePreemption as a string", []string{"--set-string", "scheduler.disablePreemption=false"}, "/scheduler/disablePreemption", "got string, want boolean"},
		{"disablePodTopologySpreadScore as a string", []string{"--set-string", "scheduler.disablePodTopologySpreadScore=false"}, "/scheduler/disablePodTopologySpreadScore", "got string, want boolean"},
		{"authDelegation enabled as a string", []string{"--set-string", "scheduler.metrics.authDelegation.enabled=false"}, "/scheduler/metrics/authDelegation/enabled", "got string, want boolean"},
		{"reader create as a string", []string{"--set-string", "scheduler.metrics.reader.create=false"}, "/scheduler/metrics/reader/create", "got string, want boolean"},
		{"reader ServiceAccount without namespace", []string{"--set-json", `scheduler.metrics.reader.serviceAccounts=[{"name":"prometheus"}]`}, "/scheduler/metrics/reader/serviceAccounts/0", "missing property 'namespace'"},
		{"Service annotation not a string", []string{"--set", "scheduler.metrics.service.annotations.a=true"}, "/scheduler/metrics/service/annotations/a", "got boolean, want string"},
		{"ServiceMonitor enabled as a string", []string{"--set-string", "scheduler.metrics.serviceMonitor.enabled=false"}, "/scheduler/metrics/serviceMonitor/enabled", "got string, want boolean"},
		{"ServiceMonitor interval without unit", []string{"--set", "scheduler.metrics.serviceMonitor.interval=30"}, "/scheduler/metrics/serviceMonitor/interval", ""},
		{"ServiceMonitor scrapeTimeout empty", []string{"--set", "scheduler.metrics.serviceMonitor.scrapeTimeout="}, "/scheduler/metrics/serviceMonitor/scrapeTimeout", ""},
		{"ServiceMonitor relabelings not a list", []string{"--set-json", `scheduler.metrics.serviceMonitor.relabelings={"a":1}`}, "/scheduler/metrics/serviceMonitor/relabelings", "got object, want array"},
		{"grafanaDashboard enabled as a string", []string{"--set-string", "scheduler.metrics.grafanaDashboard.enabled=true"}, "/scheduler/metrics/grafanaDashboard/enabled", "got string, want boolean"},
		{"resources request not a quantity", []string{"--set-json", `scheduler.resources.requests={"cpu":true}`}, "/scheduler/resources/requests/cpu", ""},
		{"nodeSelector value not a string", []string{"--set", "scheduler.nodeSelector.gpu=true"}, "/scheduler/nodeSelector/gpu", "got boolean, want string"},
		{"toleration effect unknown", []string{"--set-json", `scheduler.tolerations=[{"key":"gpu","operator":"Exists","effect":"NoScheduling"}]`}, "/scheduler/tolerations/0/effect", ""},
		{"podAnnotations value not a string", []string{"--set", "scheduler.podAnnotations.a=1"}, "/scheduler/podAnnotations/a", "got number, want string"},
		// hardening values
		{"image tag with a colon", []string{"--set", "scheduler.image.tag=v1:2"}, "/scheduler/image/tag", ""},
		{"image tag starting with a dot", []string{"--set", "scheduler.image.tag=.v1"}, "/scheduler/image/tag", ""},
		{"image digest without algorithm", []string{"--set", "scheduler.image.digest=0123abcd"}, "/scheduler/image/digest", "does not match pattern"},
		{"image digest with a space", []string{"--set", "scheduler.image.digest=sha256: abc"}, "/scheduler/image/digest", ""},
		{"image pullPolicy unknown", []string{"--set", "scheduler.image.pullPolicy=Sometimes"}, "/scheduler/image/pullPolicy", ""},
		{"empty image repository", []string{"--set", "scheduler.image.repository="}, "/scheduler/image/repository", ""},
		{"priorityClassName uppercase", []string{"--set", "scheduler.priorityClassName=System-Critical"}, "/scheduler/priorityClassName", ""},
		{"priorityClassName not a string", []string{"--set", "scheduler.priorityClassName=5"}, "/scheduler/priorityClassName", ""},
		{"enableProfiling not boolean", []string{"--set-string", "scheduler.enableProfiling=true"}, "/scheduler/enableProfiling", ""},
		{"enableContentionProfiling not boolean", []string{"--set-string", "scheduler.enableContentionProfiling=false"}, "/scheduler/enableContentionProfiling", ""},
		{"client QPS 0", []string{"--set", "scheduler.clientConnection.qps=0"}, "/scheduler/clientConnection/qps", "exclusiveMinimum: got 0, want 0"},
		{"client QPS negative", []string{"--set", "scheduler.clientConnection.qps=-1"}, "/scheduler/clientConnection/qps", "exclusiveMinimum: got -1, want 0"},
		{"client QPS through --set is a string", []string{"--set", "scheduler.clientConnection.qps=12.5"}, "/scheduler/clientConnection/qps", "got string, want number"},
		{"client QPS removed", []string{"--set", "scheduler.clientConnection.qps=null"}, "/scheduler/clientConnection", "missing property 'qps'"},
		{"client burst 0", []string{"--set", "scheduler.clientConnection.burst=0"}, "/scheduler/clientConnection/burst", "minimum: got 0, want 1"},
		{"client burst fractional", []string{"--set-json", "scheduler.clientConnection.burst=1.5"}, "/scheduler/clientConnection/burst", "got number, want integer"},
		{"client burst as a string", []string{"--set-string", "scheduler.clientConnection.burst=400"}, "/scheduler/clientConnection/burst", "got string, want integer"},
		{"client burst removed", []string{"--set", "scheduler.clientConnection.burst=null"}, "/scheduler/clientConnection", "missing property 'burst'"},
		{"clientConnection with an unknown key", []string{"--set", "scheduler.clientConnection.kubeconfig=/etc/kubeconfig"}, "/scheduler/clientConnection", "additional properties 'kubeconfig' not allowed"},
		{"clientConnection not an object", []string{"--set-json", `scheduler.clientConnection=[]`}, "/scheduler/clientConnection", "got array, want object"},
		{"feature gate not boolean", []string{"--set-string", "scheduler.featureGates.Foo=yes"}, "/scheduler/featureGates/Foo", "got string, want boolean"},
		{"feature gate as a number", []string{"--set", "scheduler.featureGates.Foo=1"}, "/scheduler/featureGates/Foo", "got number, want boolean"},
		{"feature gate with a bad name", []string{"--set", "scheduler.featureGates.bad-name=true"}, "/scheduler/featureGates", "additional properties 'bad-name' not allowed"},
		{"feature gate name with a dot", []string{"--set", `scheduler.featureGates.Foo\.Bar=true`}, "/scheduler/featureGates", "additional properties 'Foo.Bar' not allowed"},
		{"featureGates not an object", []string{"--set-json", `scheduler.featureGates=["NominatedNodeNameForExpectation=false"]`}, "/scheduler/featureGates", ""},
		{"metrics TLS Secret name invalid", []string{"--set", "scheduler.metrics.tls.secretName=Bad_Name"}, "/scheduler/metrics/tls/secretName", ""},
		{"ServiceMonitor tlsConfig not an object", []string{"--set", "scheduler.metrics.serviceMonitor.tlsConfig=x"}, "/scheduler/metrics/serviceMonitor/tlsConfig", ""},
		{"ServiceMonitor CA Secret name invalid", []string{"--set", "scheduler.metrics.serviceMonitor.ca.secret.name=Bad_Name"}, "/scheduler/metrics/serviceMonitor/ca/secret/name", ""},
		{"ServiceMonitor CA key empty", []string{"--set", "scheduler.metrics.serviceMonitor.ca.configMap.key="}, "/scheduler/metrics/serviceMonitor/ca/configMap/key", ""},
		{"ServiceMonitor serverName not a string", []string{"--set", "scheduler.metrics.serviceMonitor.serverName=5"}, "/scheduler/metrics/serviceMonitor/serverName", ""},
		{"ServiceMonitor authorization type Basic", []string{"--set", "scheduler.metrics.serviceMonitor.authorization.type=Basic"}, "/scheduler/metrics/serviceMonitor/authorization/type", ""},
		{"ServiceMonitor authorization type empty", []string{"--set", "scheduler.metrics.serviceMonitor.authorization.type="}, "/scheduler/metrics/serviceMonitor/authorization/type", ""},
		{"ServiceMonitor credentials key with a slash", []string{"--set", "scheduler.metrics.serviceMonitor.authorization.credentials.key=a/b"}, "/scheduler/metrics/serviceMonitor/authorization/credentials/key", ""},
		{"PrometheusRule enabled not boolean", []string{"--set-string", "scheduler.metrics.prometheusRule.enabled=true"}, "/scheduler/metrics/prometheusRule/enabled", ""},
		{"PrometheusRule label not a scalar", []string{"--set-json", `scheduler.metrics.prometheusRule.additionalLabels={"a":{"b":1}}`}, "/scheduler/metrics/prometheusRule/additionalLabels/a", ""},
		{"PrometheusRule selector not a string", []string{"--set", "scheduler.metrics.prometheusRule.selector=5"}, "/scheduler/metrics/prometheusRule/selector", ""},
		{"NetworkPolicy enabled not boolean", []string{"--set-string", "scheduler.networkPolicy.enabled=true"}, "/scheduler/networkPolicy/enabled", ""},
		{"NetworkPolicy from not an array", []string{"--set-json", `scheduler.networkPolicy.from={"podSelector":{}}`}, "/scheduler/networkPolicy/from", ""},
		{"NetworkPolicy empty peer", []string{"--set-json", `scheduler.networkPolicy.from=[{}]`}, "/scheduler/networkPolicy/from/0", ""},
		{"NetworkPolicy peer with unknown key", []string{"--set-json", `scheduler.networkPolicy.from=[{"podSelectr":{}}]`}, "/scheduler/networkPolicy/from/0", ""},
		{"NetworkPolicy ipBlock without cidr", []string{"--set-json", `scheduler.networkPolicy.from=[{"ipBlock":{}}]`}, "/scheduler/networkPolicy/from/0/ipBlock", "missing property 'cidr'"},
		{"liveness timeoutSeconds 0", []string{"--set", "scheduler.probes.liveness.timeoutSeconds=0"}, "/scheduler/probes/liveness/timeoutSeconds", ""},
		{"liveness failureThreshold 0", []string{"--set", "scheduler.probes.liveness.failureThreshold=0"}, "/scheduler/probes/liveness/failureThreshold", ""},
		{"readiness periodSeconds 0", []string{"--set", "scheduler.probes.readiness.periodSeconds=0"}, "/scheduler/probes/readiness/periodSeconds", ""},
		{"readiness timeoutSeconds 0", []string{"--set", "scheduler.probes.readiness.timeoutSeconds=0"}, "/scheduler/probes/readiness/timeoutSeconds", ""},
		{"readiness failureThreshold 0", []string{"--set", "scheduler.probes.readiness.failureThreshold=0"}, "/scheduler/probes/readiness/failureThreshold", ""},
		{"startup enabled not boolean", []string{"--set-string", "scheduler.probes.startup.enabled=true"}, "/scheduler/probes/startup/enabled", ""},
		{"allowed topology key not a label key", []string{"--set", "scheduler.plugin.allowedTopologyKeys={not a key}"}, "/scheduler/plugin/allowedTopologyKeys/0", ""},
		{"maxHoldsPerNamespace negative", []string{"--set", "scheduler.plugin.maxHoldsPerNamespace=-1"}, "/scheduler/plugin/maxHoldsPerNamespace", ""},
		{"placement label not a label key", []string{"--set", "scheduler.plugin.placementLabels={not a key}"}, "/scheduler/plugin/placementLabels/0", ""},
		{"domainPreferences unknown", []string{"--set", "scheduler.plugin.domainPreferences=PodAffinity"}, "/scheduler/plugin/domainPreferences", ""},
		{"bindWindowMilliseconds above a minute", []string{"--set", "scheduler.plugin.bindWindowMilliseconds=60001"}, "/scheduler/plugin/bindWindowMilliseconds", ""},
		{"startup path without slash", []string{"--set", "scheduler.probes.startup.path=livez"}, "/scheduler/probes/startup/path", ""},
		{"startup periodSeconds 0", []string{"--set", "scheduler.probes.startup.periodSeconds=0"}, "/scheduler/probes/startup/periodSeconds", ""},
		{"startup timeoutSeconds 0", []string{"--set", "scheduler.probes.startup.timeoutSeconds=0"}, "/scheduler/probes/startup/timeoutSeconds", ""},
		{"startup failureThreshold 0", []string{"--set", "scheduler.probes.startup.failureThreshold=0"}, "/scheduler/probes/startup/failureThreshold", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res := template(t, tc.args...)
			if res.err == nil {
				t.Fatalf("render succeeded; want a schema failure at %s", tc.path)
			}
			wantContains(t, "stderr", res.stderr, schemaErr)
			if tc.path != "" {
				wantContains(t, "stderr", res.stderr, "- at '"+tc.path+"'")
			}
			if tc.detail != "" {
				wantContains(t, "stderr", res.stderr, tc.detail)
			}
		})
	}

	kube := []struct{ version string }{{"1.34.99"}, {"1.36.0"}, {"1.34.0"}, {"1.37.0"}}
	for _, tc := range kube {
		t.Run("kube version "+tc.version, func(t *testing.T) {
			t.Parallel()
			res := templateKube(t, tc.version, releaseNS)
			if res.err == nil {
				t.Fatalf("render for Kubernetes %s succeeded; want a kubeVersion refusal", tc.version)
			}
			wantContains(t, "stderr", res.stderr, "chart requires kubeVersion: >=1.35.0-0 <1.36.0-0 which is incompatible with Kubernetes v"+tc.version)
		})
	}
}

func TestSchemaAccepts(t *testing.T) {
	cases := []struct {
		name string
		args []string
	}{
		{"kube 1.35.9", []string{"--kube-version", "1.35.9"}},
		{"name of 55 characters", []string{"--set", "scheduler.name=" + strings.Repeat("a", 55)}},
		{"one-character name", []string{"--set", "scheduler.name=x"}},
		{"percentage null", []string{"--set", "scheduler.percentageOfNodesToScore=null"}},
		{"maxUnavailable as a percentage", []string{"--set", "scheduler.deploymentStrategy.rollingUpdate.maxUnavailable=50%"}},
		{"weights at their maxima", []string{"--set", "scheduler.omeGangPack.scoreWeight=1000000", "--set", "scheduler.nodeResourcesFit.scoreWeight=1000000", "--set-json", `scheduler.nodeResourcesFit.resources=[{"name":"cpu","weight":100}]`}},
		{"ports at the maximum", []string{"--set", "scheduler.metrics.securePort=65535", "--set", "scheduler.metrics.service.port=65535"}},
		{"service types", []string{"--set", "scheduler.metrics.service.type=LoadBalancer"}},
		{"open maps take any key", []string{"--set", "scheduler.nodeSelector.example\\.com/pool=sched", "--set-string", "scheduler.podAnnotations.example\\.com/team=sched", "--set", "scheduler.metrics.serviceMonitor.additionalLabels.release=kp", "--set-json", `scheduler.metrics.serviceMonitor.tlsConfig={"caFile":"/etc/ca.crt","serverName":"x"}`}},
		{"Kubernetes objects with every field", []string{"--set-json", `scheduler.resources={"requests":{"cpu":1,"memory":"1Gi"},"limits":{"memory":"2Gi"}}`, "--set-json", `scheduler.tolerations=[{"key":"gpu","operator":"Equal","value":"x","effect":"NoExecute","tolerationSeconds":30}]`, "--set-json", `scheduler.topologySpreadConstraints=[{"maxSkew":1,"minDomains":2,"topologyKey":"zone","whenUnsatisfiable":"DoNotSchedule","nodeAffinityPolicy":"Honor","nodeTaintsPolicy":"Ignore","matchLabelKeys":["pod-template-hash"],"labelSelector":{"matchExpressions":[{"key":"a","operator":"In","values":["b"]}]}}]`}},
		{"metrics reader and pull secrets", []string{"--set-json", `scheduler.metrics.reader.serviceAccounts=[{"name":"prometheus","namespace":"monitoring"}]`, "--set-json", `global.imagePullSecrets=[{"name":"regcred"}]`, "--set", "scheduler.verbosity=0"}},
		{"replicaCount 1 with minAvailable 0 (§7.7)", []string{"--set", "scheduler.replicaCount=1", "--set", "scheduler.podDisruptionBudget.minAvailable=0"}},
		{"image tag with dots, dashes and underscores", []string{"--set", "scheduler.image.tag=v1.3.0-rc_1"}},
		{"image digest sha512", []string{"--set", "scheduler.image.digest=sha512:" + strings.Repeat("ab", 64)}},
		{"pullPolicy Never", []string{"--set", "scheduler.image.pullPolicy=Never"}},
		{"priorityClassName with dots", []string{"--set", "scheduler.priorityClassName=team.gpu-critical"}},
		{"empty priorityClassName", []string{"--set", "scheduler.priorityClassName="}},
		{"profiling on", []string{"--set", "scheduler.enableProfiling=true", "--set", "scheduler.enableContentionProfiling=true"}},
		{"feature gates", []string{"--set", "scheduler.featureGates.NominatedNodeNameForExpectation=false", "--set", "scheduler.featureGates.SchedulerAsyncAPICalls=true"}},
		{"feature gates removed", []string{"--set", "scheduler.featureGates=null"}},
		{"client rate limit, fractional QPS", []string{"--set-json", "scheduler.clientConnection.qps=0.5", "--set", "scheduler.clientConnection.burst=1"}},
		{"client rate limit removed", []string{"--set", "scheduler.clientConnection=null"}},
		{"CA key with dots", []string{"--set", "scheduler.metrics.serviceMonitor.enabled=true", "--set", "scheduler.metrics.serviceMonitor.ca.secret.name=tls", "--set", "scheduler.metrics.serviceMonitor.ca.secret.key=ca.bundle.pem"}},
		{"NetworkPolicy peers of every kind", []string{"--set", "scheduler.networkPolicy.enabled=true", "--set-json", `scheduler.networkPolicy.from=[{"podSelector":{}},{"namespaceSelector":{"matchLabels":{"a":"b"}}},{"ipBlock":{"cidr":"10.0.0.0/8"}}]`}},
		{"PrometheusRule with labels", []string{"--set", "scheduler.metrics.prometheusRule.enabled=true", "--set", "scheduler.metrics.prometheusRule.additionalLabels.release=kube-prometheus"}},
		{"startup probe removed", []string{"--set", "scheduler.probes.startup=null"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res := template(t, tc.args...)
			if res.err != nil {
				t.Fatalf("render failed: %v\n%s", res.err, res.stderr)
			}
			r := parseRender(t, res.stdout)
			if len(r.ofKind("Deployment")) != 1 {
				t.Errorf("want one Deployment, got objects %v", r.ids())
			}
		})
	}
}

// ---------------------------------------------------------------------------------------
// Values documentation and defaults

// leafKeys lists dotted keys of values.yaml leaves (maps are walked; lists are leaves).
func leafKeys(prefix string, v any, out *[]string) {
	m, ok := v.(map[string]any)
	if !ok || len(m) == 0 {
		*out = append(*out, prefix)
		return
	}
	for k, c := range m {
		p := k
		if prefix != "" {
			p = prefix + "." + k
		}
		leafKeys(p, c, out)
	}
}

// chartValues reads the chart's values.yaml.
func chartValues(t *testing.T) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(chartDir(t), "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var vals map[string]any
	if err := yaml.Unmarshal(b, &vals); err != nil {
		t.Fatal(err)
	}
	return vals
}

func TestValuesDefaultsAndReadme(t *testing.T) {
	vals := chartValues(t)
	t.Run("defaults of §2", func(t *testing.T) {
		wantYAML(t, "values.yaml", vals, fixture(t, "values/defaults.yaml"))
	})
	t.Run("README documents every value and refusal", func(t *testing.T) {
		readme, err := os.ReadFile(filepath.Join(chartDir(t), "README.md"))
		if err != nil {
			t.Fatal(err)
		}
		var keys []string
		leafKeys("", vals, &keys)
		// resources, affinity and the per-alert settings are documented as whole objects
		for _, k := range keys {
			for _, whole := range []string{"scheduler.resources", "scheduler.affinity", "scheduler.metrics.prometheusRule.alerts"} {
				if strings.HasPrefix(k, whole+".") {
					k = whole
				}
			}
			wantContains(t, "README.md", string(readme), "`"+k+"`")
		}
		for _, msg := range []string{
			"scheduler.leaderElect must be true when scheduler.replicaCount is greater than 1",
			"scheduler.plugin.podGroupTopologyKeyAnnotation must be ome.io/topology-key when scheduler.omeControllerIntegration.enabled is true; disable OME controller integration for generic producers",
			"scheduler.podDisruptionBudget.minAvailable must be less than scheduler.replicaCount so voluntary maintenance can make progress",
			"scheduler.metrics.serviceMonitor.enabled requires scheduler.metrics.service.enabled \u2014 the ServiceMonitor selects the metrics Service",
			"scheduler.metrics.serviceMonitor.ca: set secret.name or configMap.name, not both",
		} {
			wantContains(t, "README.md", string(readme), msg)
		}
		// The hardened install from the repository path and every alert of the PrometheusRule.
		wantContains(t, "README.md", string(readme), "helm install ome-scheduler charts/ome-scheduler")
		for _, a := range omeAlerts {
			wantContains(t, "README.md", string(readme), "`"+a+"`")
		}
	})
}
