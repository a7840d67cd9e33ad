{{/*
Scheduler name ({name}): profile schedulerName, Lease name, prefix of every object name.
*/}}
{{- define "ome-scheduler.name" -}}
{{- .Values.scheduler.name -}}
{{- end -}}

{{/*
Labels on every object.
*/}}
{{- define "ome-scheduler.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name | quote }}
app.kubernetes.io/component: scheduler
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: ome
{{- end -}}

{{/*
Selector labels: fixed chart name (independent of scheduler.name) and the release name, so
that two releases in one namespace never select each other's pods.
*/}}
{{- define "ome-scheduler.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name | quote }}
app.kubernetes.io/component: scheduler
{{- end -}}

{{/*
ServiceAccount subject of the scheduler.
*/}}
{{- define "ome-scheduler.subject" -}}
- kind: ServiceAccount
  name: {{ include "ome-scheduler.name" . }}
  namespace: {{ .Release.Namespace }}
{{- end -}}

{{/*
Image reference: {global.hub}/{repository} when global.hub is non-empty and the repository
contains no "/", otherwise {repository}; then @{digest} when image.digest is set, else
:{tag}, where an empty tag is the chart's appVersion.
*/}}
{{- define "ome-scheduler.image" -}}
{{- $img := .Values.scheduler.image -}}
{{- $repo := toString $img.repository -}}
{{- $tag := "" -}}
{{- if not (kindIs "invalid" $img.tag) -}}
{{- $tag = toString $img.tag -}}
{{- end -}}
{{- if eq $tag "" -}}
{{- $tag = toString .Chart.AppVersion -}}
{{- end -}}
{{- $digest := toString ($img.digest | default "") -}}
{{- $hub := "" -}}
{{- with .Values.global -}}
{{- $hub = toString (.hub | default "") | trimSuffix "/" -}}
{{- end -}}
{{- if and $hub (not (contains "/" $repo)) -}}
{{- $repo = printf "%s/%s" $hub $repo -}}
{{- end -}}
{{- if $digest -}}
{{- printf "%s@%s" $repo $digest -}}
{{- else -}}
{{- printf "%s:%s" $repo $tag -}}
{{- end -}}
{{- end -}}

{{/*
Pod imagePullSecrets: scheduler.imagePullSecrets, else global.imagePullSecrets.
*/}}
{{- define "ome-scheduler.imagePullSecrets" -}}
{{- $secrets := .Values.scheduler.imagePullSecrets -}}
{{- if not $secrets -}}
{{- with .Values.global -}}
{{- $secrets = .imagePullSecrets -}}
{{- end -}}
{{- end -}}
{{- with $secrets -}}
{{- toYaml . -}}
{{- end -}}
{{- end -}}

{{/*
Render-time refusals of the Deployment.
*/}}
{{- define "ome-scheduler.validateDeployment" -}}
{{- $s := .Values.scheduler -}}
{{- if and (gt (int64 $s.replicaCount) 1) (not $s.leaderElect) -}}
{{- fail "scheduler.leaderElect must be true when scheduler.replicaCount is greater than 1" -}}
{{- end -}}
{{- if and $s.omeControllerIntegration.enabled (ne (toString $s.plugin.podGroupTopologyKeyAnnotation) "ome.io/topology-key") -}}
{{- fail "scheduler.plugin.podGroupTopologyKeyAnnotation must be ome.io/topology-key when scheduler.omeControllerIntegration.enabled is true; disable OME controller integration for generic producers" -}}
{{- end -}}
{{- end -}}

{{/*
The KubeSchedulerConfiguration (ConfigMap key config.yaml), unindented.
*/}}
{{- define "ome-scheduler.schedulerConfig" -}}
{{- $s := .Values.scheduler -}}
{{- $p := $s.plugin -}}
{{- $name := include "ome-scheduler.name" . -}}
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
enableProfiling: {{ eq (toString $s.enableProfiling) "true" }}
enableContentionProfiling: {{ eq (toString $s.enableContentionProfiling) "true" }}
{{- with $s.clientConnection }}
{{- $qps := float64 .qps }}
clientConnection:
  qps: {{ if eq $qps (floor $qps) }}{{ int64 $qps }}{{ else }}{{ $qps }}{{ end }}
  burst: {{ int64 .burst }}
{{- end }}
leaderElection:
  leaderElect: {{ $s.leaderElect }}
  resourceName: {{ $name }}
  resourceNamespace: {{ .Release.Namespace }}
profiles:
  - schedulerName: {{ $name }}
{{- if not (kindIs "invalid" $s.percentageOfNodesToScore) }}
    percentageOfNodesToScore: {{ int64 $s.percentageOfNodesToScore }}
{{- end }}
    plugins:
{{- if $s.gangQueueSort }}
      queueSort:
        enabled:
          - name: OMEGangSort
        disabled:
          - name: PrioritySort
{{- end }}
      multiPoint:
        enabled:
          - name: OMEGangPack
        disabled:
          - name: DefaultPreemption
      bind:
        enabled:
          - name: OMEGangPack
          - name: DefaultBinder
      score:
        enabled:
          - name: NodeResourcesFit
            weight: {{ int64 $s.nodeResourcesFit.scoreWeight }}
          - name: OMEGangPack
            weight: {{ int64 $s.omeGangPack.scoreWeight }}
{{- if $s.disablePodTopologySpreadScore }}
        disabled:
          - name: PodTopologySpread
{{- end }}
    pluginConfig:
      - name: OMEGangPack
        args:
{{- with $p.topologyKey }}
          topologyKey: {{ toString . | quote }}
{{- end }}
          podGroupTopologyKeyAnnotation: {{ toString $p.podGroupTopologyKeyAnnotation | quote }}
          unsupportedPlacementGroupLabel: {{ toString ($p.unsupportedPlacementGroupLabel | default "") | quote }}
          placementGroupLabel: {{ toString ($p.placementGroupLabel | default "") | quote }}
          defaultPermitTimeoutSeconds: {{ int64 $p.defaultPermitTimeoutSeconds }}
          podGroupSyncTimeoutSeconds: {{ int64 $p.podGroupSyncTimeoutSeconds }}
          gcIntervalSeconds: {{ int64 $p.gcIntervalSeconds }}
          standaloneDomainPacking: {{ $p.standaloneDomainPacking }}
{{- if eq (toString $p.gangSoftSpread) "false" }}
          gangSoftSpread: false
{{- end }}
{{- if eq (toString $p.domainPreferences) "None" }}
          domainPreferences: None
{{- end }}
{{- with $p.allowedTopologyKeys }}
          allowedTopologyKeys:
{{- range . }}
            - {{ toString . | quote }}
{{- end }}
{{- end }}
{{- with $p.maxHoldsPerNamespace }}
          maxHoldsPerNamespace: {{ int64 . }}
{{- end }}
{{- if not (kindIs "invalid" $p.bindWindowMilliseconds) }}
          bindWindowMilliseconds: {{ int64 $p.bindWindowMilliseconds }}
{{- end }}
{{- if not (kindIs "invalid" $p.placementLabels) }}
{{- if $p.placementLabels }}
          placementLabels:
{{- range $p.placementLabels }}
            - {{ toString . | quote }}
{{- end }}
{{- else }}
          placementLabels: []
{{- end }}
{{- end }}
{{- if not $s.disablePreemption }}
          preemption: true
{{- end }}
      - name: NodeResourcesFit
        args:
          scoringStrategy:
            type: MostAllocated
{{- with $s.nodeResourcesFit.resources }}
            resources:
{{- range . }}
              - name: {{ .name }}
{{- if hasKey . "weight" }}
                weight: {{ int64 .weight }}
{{- end }}
{{- end }}
{{- end }}
{{- end -}}
