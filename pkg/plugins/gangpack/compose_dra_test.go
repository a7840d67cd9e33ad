package gangpack

import (
	"os"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/structured"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/utils/ptr"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/metrics"
)

// The composition test with DRA devices: every node publishes one channel device (a
// ComputeDomain-like channel), and some gangs' members and standalone pods take one each
// through the "channel" claim template. The simulated framework gives a pod with a claim
// its node's channel (the DynamicResources filter), and the device tracker reports the
// channels of the pods on nodes (assumed, bound or terminating) as allocated, allocations in
// flight included, as kube-scheduler's claim tracker does.

const invDevicesHeld = "devices-held" // a forming gang's reserved channel is free or its own

// simDRA is the framework's shared DRA manager over the simulated cluster.
type simDRA struct{ s *sim }

func (d simDRA) ResourceClaims() fwk.ResourceClaimTracker {
	return draTracker{allocated: d.s.channelsHeld(), claims: d.s.channelClaims()}
}
func (d simDRA) ResourceSlices() fwk.ResourceSliceLister {
	m := channelManager(d.s.nodes)
	return m.slices
}
func (d simDRA) DeviceClasses() fwk.DeviceClassLister         { return channelManager(nil).classes }
func (d simDRA) DeviceClassResolver() fwk.DeviceClassResolver { return nil }

// takesChannel reports whether the pod has a claim (the channel template).
func takesChannel(p *v1.Pod) bool { return len(p.Spec.ResourceClaims) > 0 }

// channelHolder returns the pod holding node's channel (nil: free), other than except.
func (s *sim) channelHolder(node string, except *simPod) *simPod {
	for _, sp := range s.pods {
		if sp != except && sp.onNode() && sp.node == node && takesChannel(sp.pod) {
			return sp
		}
	}
	return nil
}

// channelsHeld is the channel devices allocated: those of the pods with claims on nodes.
func (s *sim) channelsHeld() sets.Set[structured.DeviceID] {
	out := sets.New[structured.DeviceID]()
	for _, sp := range s.pods {
		if sp.onNode() && takesChannel(sp.pod) {
			out.Insert(structured.MakeDeviceID(channelClass, sp.node, "channel-0"))
		}
	}
	return out
}

// channelClaims is the claims of the pods holding channels, by namespace/name, each
// allocated its node's channel, as the resourceclaim controller names them in the pod's
// status (channelClaimName) and the DynamicResources plugin allocates them: preemption reads
// them to know which devices a victim gives back.
func (s *sim) channelClaims() map[string]*resourceapi.ResourceClaim {
	out := map[string]*resourceapi.ResourceClaim{}
	for _, sp := range s.pods {
		if !sp.onNode() || !takesChannel(sp.pod) {
			continue
		}
		out[testNS+"/"+channelClaimName(sp.pod)] = s.channelClaimOn(sp.pod, sp.node)
	}
	return out
}

// channelClaimName is the name of p's channel claim, set in its status when it is created.
func channelClaimName(p *v1.Pod) string { return p.Name + "-channel" }

// simChannel gives p a channel claim from the template, named in its status as the
// resourceclaim controller names it.
func simChannel(p *v1.Pod) *v1.Pod {
	withChannel(p).Status.ResourceClaimStatuses = []v1.PodResourceClaimStatus{{Name: "channel", ResourceClaimName: ptr.To(channelClaimName(p))}}
	return p
}

// claimFreed delivers the deallocation of the channel claim of a pod that left its node (the
// resourceclaim controller deallocates it once the pod is gone) to the parked pods' hints:
// OMEGangPack's (hintClaimFreed) for a pod it rejected, and the DynamicResources plugin's,
// which queues every pod whose claims exist on any deallocation (isSchedulableAfterClaimChange,
// dynamicresources.go:284-291 in v1.35.4), for a pod the filters rejected.
func (s *sim) claimFreed(holder *simPod) {
	if !s.dra || !takesChannel(holder.pod) {
		return
	}
	allocated := s.channelClaimOn(holder.pod, holder.node)
	freed := allocated.DeepCopy()
	freed.Status.Allocation = nil
	s.deliver(func(sp *simPod) bool {
		if !takesChannel(sp.pod) {
			return false
		}
		hint, err := hintClaimFreed(klog.Background(), sp.pod, allocated, freed)
		return (sp.byGang && (err != nil || hint == fwk.Queue)) || sp.byFit
	})
}

// channelClaimOn is p's channel claim, allocated node's channel.
func (s *sim) channelClaimOn(p *v1.Pod, node string) *resourceapi.ResourceClaim {
	name := channelClaimName(p)
	return &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: name},
		Status: resourceapi.ResourceClaimStatus{Allocation: &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{
			Results: []resourceapi.DeviceRequestAllocationResult{{Request: "channel", Driver: channelClass, Pool: node, Device: "channel-0"}}}}}}
}

// deviceEvictions counts the channel holders that gangs taking channels evicted, over every
// DRA sequence played (TestComposeDRA requires some: DRA preemption is exercised).
var deviceEvictions atomic.Int64

// countDeviceEviction counts victim when it held a channel and the preemption's note names a
// gang whose members take channels.
func (s *sim) countDeviceEviction(victim *simPod, note string) {
	if !s.dra || !takesChannel(victim.pod) {
		return
	}
	rest, ok := strings.CutPrefix(note, "Preempted by gang ")
	if !ok {
		return
	}
	if key, _, ok := strings.Cut(rest, " "); ok && s.gangTakesChannels(key) {
		deviceEvictions.Add(1)
	}
}

// channelFilter is the DynamicResources filter of the simulated framework: a pod with a claim
// needs its node's channel free.
func (s *sim) channelFilter(sp *simPod, node string) *fwk.Status {
	if !s.dra || !takesChannel(sp.pod) || s.channelHolder(node, sp) == nil {
		return nil
	}
	return fwk.NewStatus(fwk.Unschedulable, "cannot allocate all claims")
}

// checkDevicesHeld: on every node a forming DRA gang reserves, the channel is free or held by
// a member of that gang.
func (c *checker) checkDevicesHeld(label string) {
	s := c.s
	if !s.dra {
		return
	}
	for _, held := range s.pl.ledger.Holds() {
		h := held.Commitment
		if !h.Forming() || !s.gangTakesChannels(h.Gang) {
			continue
		}
		nodes := make([]string, 0, len(h.Reserved))
		for n, slot := range h.Reserved {
			if slot.Count > 0 {
				nodes = append(nodes, n)
			}
		}
		sort.Strings(nodes)
		for _, n := range nodes {
			if sp := s.channelHolder(n, nil); sp != nil && testNS+"/"+gangKey(sp) != h.Gang {
				c.fail(invDevicesHeld, "%s: %s holds the channel of %s, which forming gang %s reserves", label, sp.pod.Name, n, h.Gang)
			}
		}
	}
}

// gangTakesChannels reports whether the gang's members take channels.
func (s *sim) gangTakesChannels(key string) bool {
	for _, sp := range s.pods {
		if testNS+"/"+sp.pod.Labels[PodGroupLabel] == key {
			return takesChannel(sp.pod)
		}
	}
	return false
}

// channelTemplate is the claim template of the members and pods that take a channel.
func channelTemplate() *resourceapi.ResourceClaimTemplate {
	return &resourceapi.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: "channel"},
		Spec: resourceapi.ResourceClaimTemplateSpec{Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
			Name: "channel", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: channelClass, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1}}}}}}}
}

// composeDRASequences is how many random sequences TestComposeDRA plays:
// OME_COMPOSE_DRA_SEQUENCES, else 300 (30 under the race detector).
func composeDRASequences(t *testing.T) int {
	if v := os.Getenv("OME_COMPOSE_DRA_SEQUENCES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("OME_COMPOSE_DRA_SEQUENCES=%q: %v", v, err)
		}
		return n
	}
	if raceEnabled {
		return 30
	}
	return 300
}

// TestComposeDRA plays random sequences in a cluster whose nodes publish one channel each and
// where some gangs and pods take a channel: every invariant of the composition test holds,
// and a forming gang's reserved channels are never given to another pod.
func TestComposeDRA(t *testing.T) {
	metrics.Register()
	n := composeDRASequences(t)
	before := deviceEvictions.Load()
	for seed := int64(1); seed <= int64(n); seed++ {
		events := generate(seed, 60)
		if v := runComposeWith(t, events, true); v != nil {
			small := shrinkWith(t, events, v.inv, true)
			t.Fatalf("seed %d: %s: %s\nshrunk: %s", seed, v.inv, v.msg, formatCase(seed, v, small))
		}
	}
	got := deviceEvictions.Load() - before
	t.Logf("%d sequences, %d channel holders evicted by gangs taking channels", n, got)
	if n >= 30 && got == 0 {
		t.Fatalf("no gang taking channels evicted a channel holder in %d sequences: DRA preemption is not exercised", n)
	}
}
