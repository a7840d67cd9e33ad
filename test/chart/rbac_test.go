package chart_test

import (
	"fmt"
	"strings"
	"testing"
)

// ---------------------------------------------------------------------------------------
// RBAC

// forbiddenResources may never appear in a rule of a role the chart creates.
var forbiddenResources = map[string]bool{
	"pods": true, "nodes": true, "bindings": true, "pods/binding": true, "pods/status": true,
	"persistentvolumes": true, "persistentvolumeclaims": true, "events": true,
	"configmaps": true, "secrets": true, "podgroups/status": true,
	"resourceclaims": true, "resourceclaims/status": true, "resourceslices": true,
	"deviceclasses": true,
}

// readOnlyResources may be granted get, list and watch only, and none of their subresources:
// PodGroups, and ResourceClaimTemplates, which OMEGangPack reads to count a gang's DRA devices
// and system:kube-scheduler does not grant.
var readOnlyResources = []string{"podgroups", "resourceclaimtemplates"}

func strList(v any) []string {
	items, _ := v.([]any)
	out := make([]string, 0, len(items))
	for _, i := range items {
		s, _ := i.(string)
		out = append(out, s)
	}
	return out
}

// rbacViolations lists every grant the chart must never make in the rules of one role:
// wildcards, forbiddenResources, readOnlyResources beyond read-only, and leases other than
// create or get/update of the scheduler's own Lease.
func rbacViolations(role string, rules []any, name string) []string {
	var v []string
	for i, ri := range rules {
		rule, _ := ri.(map[string]any)
		groups := strList(rule["apiGroups"])
		resources := strList(rule["resources"])
		verbs := strList(rule["verbs"])
		names := strList(rule["resourceNames"])
		urls := strList(rule["nonResourceURLs"])
		where := fmt.Sprintf("%s rule %d", role, i)
		for _, list := range [][]string{groups, resources, verbs, urls, names} {
			for _, s := range list {
				if strings.Contains(s, "*") {
					v = append(v, where+": wildcard "+s)
				}
			}
		}
		for _, res := range resources {
			if forbiddenResources[res] {
				v = append(v, where+": grants "+res)
			}
			for _, ro := range readOnlyResources {
				if !strings.HasPrefix(res, ro) {
					continue
				}
				if res != ro {
					v = append(v, where+": grants "+res)
				}
				for _, verb := range verbs {
					if verb != "get" && verb != "list" && verb != "watch" {
						v = append(v, where+": verb "+verb+" on "+ro)
					}
				}
			}
			if res == "leases" {
				for _, verb := range verbs {
					switch verb {
					case "create":
					case "get", "update":
						if len(names) != 1 || names[0] != name {
							v = append(v, where+": "+verb+" on leases not restricted to "+name)
						}
					default:
						v = append(v, where+": verb "+verb+" on leases")
					}
				}
			}
		}
	}
	return v
}

func TestRBAC(t *testing.T) {
	variants := []struct {
		name string
		args []string
		sub  string // scheduler name
	}{
		{"defaults", nil, "ome-scheduler"},
		{"everything on", []string{"--set", "scheduler.metrics.serviceMonitor.enabled=true", "--set-json", `scheduler.metrics.reader.serviceAccounts=[{"name":"prometheus","namespace":"monitoring"}]`, "--set", "scheduler.metrics.grafanaDashboard.enabled=true"}, "ome-scheduler"},
		{"renamed", []string{"--set", "scheduler.name=gangs"}, "gangs"},
	}
	for _, tc := range variants {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res := template(t, tc.args...)
			if res.err != nil {
				t.Fatalf("render failed: %v\n%s", res.err, res.stderr)
			}
			r := parseRender(t, res.stdout)
			roles := append(r.ofKind("ClusterRole"), r.ofKind("Role")...)
			if len(roles) == 0 {
				t.Fatal("no roles rendered")
			}
			for _, role := range roles {
				rules, _ := role.obj["rules"].([]any)
				for _, msg := range rbacViolations(role.kind()+"/"+role.name(), rules, tc.sub) {
					t.Errorf("must-not-grant: %s", msg)
				}
			}
			for _, kind := range []string{"ClusterRoleBinding", "RoleBinding"} {
				for _, b := range r.ofKind(kind) {
					if ref, _ := dig(b.obj, "roleRef", "name").(string); ref == "cluster-admin" || ref == "admin" || ref == "edit" {
						t.Errorf("%s/%s binds %s", kind, b.name(), ref)
					}
					wantEq(t, b.name()+" roleRef.apiGroup", dig(b.obj, "roleRef", "apiGroup"), "rbac.authorization.k8s.io")
				}
			}
			wantYAML(t, "extras rules", r.get(t, "ClusterRole", tc.sub+"-extras").obj["rules"], `
- apiGroups: ["scheduling.x-k8s.io"]
  resources: ["podgroups"]
  verbs: ["get", "list", "watch"]
- apiGroups: ["resource.k8s.io"]
  resources: ["resourceclaimtemplates"]
  verbs: ["get", "list", "watch"]
`)
			le := r.get(t, "Role", tc.sub+"-leader-election")
			wantEq(t, "leader-election Role namespace", le.namespace(), releaseNS)
			wantYAML(t, "leader-election rules", le.obj["rules"], `
- apiGroups: ["coordination.k8s.io"]
  resources: ["leases"]
  verbs: ["create"]
- apiGroups: ["coordination.k8s.io"]
  resources: ["leases"]
  resourceNames: ["`+tc.sub+`"]
  verbs: ["get", "update"]
`)
			for _, cr := range r.ofKind("ClusterRole") {
				rules, _ := cr.obj["rules"].([]any)
				for _, rule := range rules {
					for _, res := range strList(dig(rule, "resources")) {
						if res == "leases" {
							t.Errorf("ClusterRole %s grants leases cluster-wide", cr.name())
						}
					}
				}
			}
			wantYAML(t, "metrics-reader rules", r.get(t, "ClusterRole", tc.sub+"-metrics-reader").obj["rules"], `
- nonResourceURLs: ["/metrics"]
  verbs: ["get"]
`)
			// Bindings and rules in the rendered text, in flow style
			for _, s := range []string{
				"name: system:kube-scheduler",
				"name: system:volume-scheduler",
				"name: " + tc.sub + "-extras",
				`resources: ["podgroups"]`,
				`resources: ["resourceclaimtemplates"]`,
				"name: system:auth-delegator",
				"name: " + tc.sub + "-metrics-reader",
				`nonResourceURLs: ["/metrics"]`,
			} {
				wantContains(t, "render", res.stdout, s)
			}
			// Rules are rendered in flow style exactly as written below.
			for _, l := range []string{
				`  - apiGroups: ["coordination.k8s.io"]`,
				`    resources: ["leases"]`,
				`    verbs: ["create"]`,
				`    resourceNames: ["` + tc.sub + `"]`,
				`    verbs: ["get", "update"]`,
				`  - apiGroups: ["scheduling.x-k8s.io"]`,
				`    resources: ["podgroups"]`,
				`    verbs: ["get", "list", "watch"]`,
				`  - apiGroups: ["resource.k8s.io"]`,
				`    resources: ["resourceclaimtemplates"]`,
				`  - nonResourceURLs: ["/metrics"]`,
				`    verbs: ["get"]`,
			} {
				wantLine(t, "render", res.stdout, l)
			}
			for _, s := range []string{`resources: ["nodes"]`, `resources: ["pods"]`, `resources: ["persistentvolumeclaims", "persistentvolumes"]`, "cluster-admin", `"*"`} {
				wantNotContains(t, "render", res.stdout, s)
			}
		})
	}
}

// TestRBACCheckerDetectsViolations proves the must-not-grant checker can fail.
func TestRBACCheckerDetectsViolations(t *testing.T) {
	cases := []struct {
		name  string
		rules string
	}{
		{"pods", `[{apiGroups: [""], resources: ["pods"], verbs: ["get"]}]`},
		{"nodes", `[{apiGroups: [""], resources: ["nodes"], verbs: ["list"]}]`},
		{"bindings", `[{apiGroups: [""], resources: ["bindings"], verbs: ["create"]}]`},
		{"pods/binding", `[{apiGroups: [""], resources: ["pods/binding"], verbs: ["create"]}]`},
		{"pods/status", `[{apiGroups: [""], resources: ["pods/status"], verbs: ["patch"]}]`},
		{"persistentvolumes", `[{apiGroups: [""], resources: ["persistentvolumes"], verbs: ["get"]}]`},
		{"persistentvolumeclaims", `[{apiGroups: [""], resources: ["persistentvolumeclaims"], verbs: ["get"]}]`},
		{"events", `[{apiGroups: ["events.k8s.io"], resources: ["events"], verbs: ["create"]}]`},
		{"configmaps", `[{apiGroups: [""], resources: ["configmaps"], verbs: ["get"]}]`},
		{"secrets", `[{apiGroups: [""], resources: ["secrets"], verbs: ["get"]}]`},
		{"DRA", `[{apiGroups: ["resource.k8s.io"], resources: ["resourceclaims"], verbs: ["get"]}]`},
		{"DRA slices", `[{apiGroups: ["resource.k8s.io"], resources: ["resourceslices"], verbs: ["list"]}]`},
		{"claim templates create", `[{apiGroups: ["resource.k8s.io"], resources: ["resourceclaimtemplates"], verbs: ["get", "create"]}]`},
		{"claim templates subresource", `[{apiGroups: ["resource.k8s.io"], resources: ["resourceclaimtemplates/status"], verbs: ["get"]}]`},
		{"podgroups update", `[{apiGroups: ["scheduling.x-k8s.io"], resources: ["podgroups"], verbs: ["update"]}]`},
		{"podgroups/status", `[{apiGroups: ["scheduling.x-k8s.io"], resources: ["podgroups/status"], verbs: ["get"]}]`},
		{"lease update unrestricted", `[{apiGroups: ["coordination.k8s.io"], resources: ["leases"], verbs: ["get", "update"]}]`},
		{"lease of another name", `[{apiGroups: ["coordination.k8s.io"], resources: ["leases"], resourceNames: ["kube-scheduler"], verbs: ["update"]}]`},
		{"lease delete", `[{apiGroups: ["coordination.k8s.io"], resources: ["leases"], resourceNames: ["ome-scheduler"], verbs: ["delete"]}]`},
		{"wildcard verb", `[{apiGroups: ["scheduling.x-k8s.io"], resources: ["podgroups"], verbs: ["*"]}]`},
		{"wildcard group", `[{apiGroups: ["*"], resources: ["podgroups"], verbs: ["get"]}]`},
		{"wildcard url", `[{nonResourceURLs: ["/metrics*"], verbs: ["get"]}]`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rules, _ := fromYAML(t, tc.rules).([]any)
			if len(rbacViolations("test", rules, "ome-scheduler")) == 0 {
				t.Errorf("checker accepted forbidden rules %s", tc.rules)
			}
		})
	}
	t.Run("allowed rules pass", func(t *testing.T) {
		rules, _ := fromYAML(t, `
- {apiGroups: ["coordination.k8s.io"], resources: ["leases"], verbs: ["create"]}
- {apiGroups: ["coordination.k8s.io"], resources: ["leases"], resourceNames: ["ome-scheduler"], verbs: ["get", "update"]}
- {apiGroups: ["scheduling.x-k8s.io"], resources: ["podgroups"], verbs: ["get", "list", "watch"]}
- {apiGroups: ["resource.k8s.io"], resources: ["resourceclaimtemplates"], verbs: ["get", "list", "watch"]}
- {nonResourceURLs: ["/metrics"], verbs: ["get"]}
`).([]any)
		if v := rbacViolations("test", rules, "ome-scheduler"); len(v) != 0 {
			t.Errorf("checker rejected the allowed rules: %v", v)
		}
	})
}
