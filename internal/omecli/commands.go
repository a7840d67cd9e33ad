package omecli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/explain"
)

func (o *options) explainCommand() *cobra.Command {
	var pod string
	cmd := &cobra.Command{
		Use:   "explain podgroup NAME",
		Short: "Every domain of an existing gang's topology key, and the domain the scheduler would choose (or why none fits)",
		Example: `  kubectl ome explain podgroup llama -n team-a
  kubectl ome explain podgroup llama -n team-a -o json --scheduler-insecure-skip-tls-verify`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) != 2 || (args[0] != "podgroup" && args[0] != "podgroups" && args[0] != "pg") {
				return usagef("usage: kubectl ome explain podgroup NAME [-n NAMESPACE]")
			}
			return o.runExplain(cmd.Context(), args[1], pod)
		},
	}
	cmd.Flags().StringVar(&pod, "pod", "", "The member to plan for (default: the first unbound live member by name)")
	return cmd
}

func (o *options) runExplain(ctx context.Context, name, podName string) error {
	ns, _, err := o.config.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return err
	}
	pgc, err := o.podGroupClient()
	if err != nil {
		return err
	}
	pg, err := pgc.SchedulingV1alpha1().PodGroups(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get PodGroup %s/%s: %w", ns, name, err)
	}
	c, note, err := o.readCluster(ctx)
	if err != nil {
		return err
	}
	req := explain.Request{PodGroup: pg}
	if podName != "" {
		for _, p := range c.Pods {
			if p.Namespace == ns && p.Name == podName {
				req.Pod = p
			}
		}
		if req.Pod == nil {
			return fmt.Errorf("pod %s/%s not found", ns, podName)
		}
	}
	r, err := explain.Explain(c, req)
	if err != nil {
		return err
	}
	return o.print(r, note)
}

// shapeFlags are the flags that describe a hypothetical gang's members.
type shapeFlags struct {
	minMember     int
	requests      string
	topologyKey   string
	apart         bool
	priority      int32
	claimTemplate string
}

func (f *shapeFlags) add(cmd *cobra.Command, withSize bool, defaultRequests string) {
	fs := cmd.Flags()
	if withSize {
		fs.IntVar(&f.minMember, "min-member", 0, "The gang's minMember (required)")
	}
	fs.StringVar(&f.requests, "requests", defaultRequests, "One member's requests, e.g. nvidia.com/gpu=8,cpu=16,memory=64Gi")
	fs.StringVar(&f.topologyKey, "topology-key", "", "The node label key that defines domains (default: the scheduler's topologyKey argument, else "+DefaultTopologyKey+")")
	fs.BoolVar(&f.apart, "anti-affinity-per-node", false, "Members carry a required anti-affinity among themselves on kubernetes.io/hostname (one per node)")
	fs.StringVar(&f.claimTemplate, "claim-template", "", "A ResourceClaimTemplate YAML or JSON file: every member takes a claim from it (DRA devices)")
}

func (f *shapeFlags) shape(ns string, args *explain.Args) (explain.Shape, error) {
	reqs, err := parseRequests(f.requests)
	if err != nil {
		return explain.Shape{}, err
	}
	key := f.topologyKey
	if key == "" && args.TopologyKey == "" {
		key = DefaultTopologyKey
	}
	s := explain.Shape{Namespace: ns, MinMember: f.minMember, Requests: reqs, TopologyKey: key, AntiAffinityPerNode: f.apart}
	if f.claimTemplate != "" {
		if s.ClaimTemplate, err = readClaimTemplate(f.claimTemplate); err != nil {
			return explain.Shape{}, err
		}
	}
	if f.priority != 0 {
		p := f.priority
		s.Priority = &p
	}
	return s, nil
}

func (o *options) whatIfCommand() *cobra.Command {
	f := &shapeFlags{}
	cmd := &cobra.Command{
		Use:     "whatif --min-member N --requests nvidia.com/gpu=8[,cpu=...]",
		Short:   "Explain a hypothetical gang without creating anything",
		Example: `  kubectl ome whatif --min-member 4 --requests nvidia.com/gpu=8 --topology-key nvidia.com/gpu.clique`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) != 0 {
				return usagef("whatif takes no arguments, got %q", args)
			}
			if f.minMember < 1 {
				return usagef("--min-member must be at least 1")
			}
			return o.runShape(cmd.Context(), f, func(c *explain.Cluster, s explain.Shape) (interface{ WriteTable(io.Writer) error }, error) {
				return explain.WhatIf(c, s)
			})
		},
	}
	f.add(cmd, true, "")
	cmd.Flags().Int32Var(&f.priority, "priority", 0, "The members' priority")
	return cmd
}

func (o *options) domainsCommand() *cobra.Command {
	f := &shapeFlags{}
	cmd := &cobra.Command{
		Use:   "domains",
		Short: "One line per domain: capacity, use, and the largest gang of the given shape it can place (the fragmentation view)",
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) != 0 {
				return usagef("domains takes no arguments, got %q", args)
			}
			return o.runShape(cmd.Context(), f, func(c *explain.Cluster, s explain.Shape) (interface{ WriteTable(io.Writer) error }, error) {
				return explain.Domains(c, s)
			})
		},
	}
	f.add(cmd, false, "nvidia.com/gpu=1")
	return cmd
}

func (o *options) runShape(ctx context.Context, f *shapeFlags, run func(*explain.Cluster, explain.Shape) (interface{ WriteTable(io.Writer) error }, error)) error {
	if f.requests == "" && f.claimTemplate == "" {
		return usagef("--requests is required, e.g. --requests nvidia.com/gpu=8 (or --claim-template FILE)")
	}
	ns, _, err := o.config.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return err
	}
	c, note, err := o.readCluster(ctx)
	if err != nil {
		return err
	}
	s, err := f.shape(ns, c.Args)
	if err != nil {
		return err
	}
	r, err := run(c, s)
	if err != nil {
		return err
	}
	return o.print(r, note)
}

// parseRequests reads name=quantity[,name=quantity...].
func parseRequests(s string) (v1.ResourceList, error) {
	out := v1.ResourceList{}
	for _, part := range strings.Split(s, ",") {
		name, q, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok || name == "" {
			return nil, usagef("--requests: %q is not name=quantity", part)
		}
		qty, err := resource.ParseQuantity(q)
		if err != nil {
			return nil, usagef("--requests: %s: %v", name, err)
		}
		out[v1.ResourceName(name)] = qty
	}
	return out, nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func writeYAML(w io.Writer, v any) error {
	b, err := yaml.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// readClaimTemplate reads a ResourceClaimTemplate from a YAML or JSON file.
func readClaimTemplate(path string) (*resourceapi.ResourceClaimTemplate, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--claim-template: %w", err)
	}
	t := &resourceapi.ResourceClaimTemplate{}
	if err := yaml.UnmarshalStrict(b, t); err != nil {
		return nil, fmt.Errorf("--claim-template %s: %w", path, err)
	}
	if t.Kind != "" && t.Kind != "ResourceClaimTemplate" {
		return nil, fmt.Errorf("--claim-template %s: kind %q, want ResourceClaimTemplate", path, t.Kind)
	}
	if t.Name == "" {
		t.Name = "whatif"
	}
	if len(t.Spec.Spec.Devices.Requests) == 0 {
		return nil, fmt.Errorf("--claim-template %s: no device requests (spec.spec.devices.requests)", path)
	}
	return t, nil
}
