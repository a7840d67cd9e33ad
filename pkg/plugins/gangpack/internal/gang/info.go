package gang

import (
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/moirai-internal/ome-scheduler/pkg/placement"
)

// Label marks a gang member; its value names the PodGroup in the pod's namespace.
const Label = "scheduling.x-k8s.io/pod-group"

// Info is what PreFilter validated about a gang.
type Info struct {
	Key         string
	Namespace   string
	Name        string
	UID         string
	MinMember   int
	TopologyKey string
	Timeout     time.Duration
	// Group is the partner placement group the gang belongs to; nil = none.
	Group *GroupRef
}

func (g Info) Owner() placement.GangOwner {
	return placement.GangOwner{Gang: g.Key, Owner: g.UID}
}

// Of returns the gang key and PodGroup name of a pod; ok is false for standalone pods.
func Of(p *v1.Pod) (key, name string, ok bool) {
	name = p.Labels[Label]
	if name == "" {
		return "", "", false
	}
	return p.Namespace + "/" + name, name, true
}

// PodKey identifies a pod for the plugin's bookkeeping: its UID, or namespace/name.
func PodKey(p *v1.Pod) string {
	if p.UID != "" {
		return string(p.UID)
	}
	return p.Namespace + "/" + p.Name
}

// GroupRef is what a partner's PodGroup says about its placement group.
type GroupRef struct {
	Key       string // {ns}/{group}
	Namespace string
	Name      string
	Size      int
	// TopologyKey is the group key: the annotation, else the gang's own topology key.
	TopologyKey string
	// ExplicitKey records whether the annotation set TopologyKey.
	ExplicitKey bool
}

// PluginName is the plugin's name in the scheduler configuration; waiting pods are allowed
// and rejected under it.
const PluginName = "OMEGangPack"
