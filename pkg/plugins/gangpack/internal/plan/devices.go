package plan

import (
	"context"
	"fmt"
	"maps"
	"slices"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/devices"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/msg"
)

// Member room with DRA devices (docs/design.md §3.1): when a gang's members request devices
// through ResourceClaims, how many members fit on a node is a device question as well as a
// resource one. It is answered with kube-scheduler's own structured allocator
// (internal/devices), over the devices the framework's shared DRA manager sees (slices,
// classes, allocated devices including the allocations in flight).

// Devices is what planning reads of DRA; nil when the scheduler does not count devices (the
// DynamicResourceAllocation feature off).
type Devices interface {
	// Claims returns one member's own claims (built from its ResourceClaimTemplates) and the
	// claims every member shares (ResourceClaims named by the pod).
	Claims(pod *v1.Pod) (member, shared []*resourceapi.ResourceClaim, err error)
	// View returns the cluster's devices as they are now.
	View(ctx context.Context) (*devices.Inputs, error)
	// Used returns the ResourceClaims an existing pod uses (their allocations are the
	// devices it holds).
	Used(pod *v1.Pod) []*resourceapi.ResourceClaim
	// Seq numbers the last device change (devices.Changes): a View read after Seq returned s
	// reflects every change up to s.
	Seq() uint64
	// ChangedSince reports whether node's devices may have changed after change s.
	ChangedSince(node string, s uint64) bool
	// Last returns the last change concerning node's devices; ok false when that number
	// does not tell (devices.Changes.Last): the device view is then read to answer.
	Last(node string) (last uint64, ok bool)
	// Settled reports whether node's last device change is old enough for the DRA manager to
	// reflect it (devices.Changes.Settled); until then answers are not kept by stamp.
	Settled(node string) bool
}

// shapeClaims are the claims of one shape class's members, and their signature for the
// planner's room cache (devices.Signature).
type shapeClaims struct {
	member, shared []*resourceapi.ResourceClaim
	sig            string
}

// gangDevices is one planning's device view: per shape class its claims (nil for a shape
// without claims) and the devices, read on first use (inputs): a planning whose domains all
// come from the plan cache reads none. nil when no member of the gang requests a device.
type gangDevices struct {
	claims []*shapeClaims
	ctx    context.Context
	read   bool
	in     *devices.Inputs // nil until read, or when reading failed
	seq    uint64          // the device change the view reflects (Devices.Seq before View)
	// unsettled: a node planned had a device change too recent for the view to be trusted
	// to reflect it (Devices.Settled).
	unsettled bool
}

// inputsSeq is inputs and the device change the view reflects (RoomStamped).
func (p *cycle) inputsSeq() (*devices.Inputs, uint64) {
	in := p.inputs()
	return in, p.dev.seq
}

// inputs returns the planning's device view, reading it on first use; nil when it cannot
// be read (devErr says why: the gang waits with it).
func (p *cycle) inputs() *devices.Inputs {
	d := p.dev
	if !d.read {
		d.read, d.seq = true, p.pl.devices.Seq()
		in, err := p.pl.devices.View(d.ctx)
		if err != nil {
			if p.devErr == nil {
				p.devErr = fmt.Errorf("read the cluster's devices: %w", err)
			}
			in = nil
		}
		d.in = in
	}
	return d.in
}

// readDevices reads the shape classes' claims and, when any has one, the device view. An
// error (a claim template or class that does not exist, a claim that cannot be read) is kept
// in devErr: the gang then waits with it instead of being planned blind to its devices.
func (p *cycle) readDevices() {
	p.dev, p.devErr = nil, nil
	if p.pl.devices == nil {
		return
	}
	var claims []*shapeClaims
	for i, c := range p.classes {
		if len(c.rep.Spec.ResourceClaims) == 0 {
			continue
		}
		member, shared, err := p.pl.devices.Claims(c.rep)
		if err != nil {
			p.devErr = err
			return
		}
		if claims == nil {
			claims = make([]*shapeClaims, len(p.classes))
		}
		claims[i] = &shapeClaims{member: member, shared: shared, sig: devices.Signature(member, shared, p.perNode())}
	}
	if claims == nil {
		return
	}
	p.dev = &gangDevices{claims: claims, ctx: klog.NewContext(context.Background(), p.logger)}
	p.pl.rememberClaims(p.info.Key, claims)
}

// rememberClaims records the claims of a gang's members (those of its first shape with
// claims), so that other plannings and Filter set aside the devices its reservation holds.
func (pl *Planner) rememberClaims(key string, claims []*shapeClaims) {
	for _, sc := range claims {
		if sc != nil && len(sc.member) > 0 {
			pl.gangClaims.Store(key, sc.member)
			return
		}
	}
}

// HoldsOn returns the devices the forming gangs (other than own) reserve on node: for each
// of gangs whose members have claims, its members reserved there, each with its members'
// claims. Planning and Filter allocate them before counting anyone else's room there.
func (pl *Planner) HoldsOn(node string, gangs []string, own string) []devices.Hold {
	var out []devices.Hold
	for _, g := range gangs {
		if g == own {
			continue
		}
		v, ok := pl.gangClaims.Load(g)
		if !ok {
			continue
		}
		c, ok := pl.read.Commitment(g)
		if !ok || !c.Forming() {
			if !ok {
				pl.gangClaims.Delete(g) // a gang without a pin holds nothing
			}
			continue
		}
		if k := c.Reserved[node].Count; k > 0 {
			out = append(out, devices.Hold{Claims: v.([]*resourceapi.ResourceClaim), Count: k})
		}
	}
	return out
}

// deviceRoom caps a node's fit and room by its devices, once the devices other forming gangs
// reserve there are set aside (unless raw): a shape whose claims cannot be allocated there
// does not fit, and the node holds at most as many members as the devices of its tightest
// shape with claims allow (limited false: no shape has claims). An allocator error is kept
// in devErr (the gang waits with it).
func (p *cycle) deviceRoom(ni fwk.NodeInfo, fits []bool, raw bool) (limit int, limited bool) {
	if p.dev == nil {
		return 0, false
	}
	node := ni.Node()
	var holds []devices.Hold
	if r, ok := p.others[node.Name]; ok && !raw {
		holds = p.pl.HoldsOn(node.Name, r.Gangs, p.info.Key)
	}
	last, stamped := p.pl.devices.Last(node.Name)
	if !p.pl.devices.Settled(node.Name) {
		// A recent change the view may not reflect yet: answer from the view itself (its
		// token), and keep no plan-cache entry that trusts the change number (planDomain).
		stamped, p.dev.unsettled = false, true
	}
	for s, sc := range p.dev.claims {
		if sc == nil || s >= len(fits) || !fits[s] {
			continue
		}
		var room int
		var err error
		if stamped { // the view is read only when the node's answer is not kept
			room, err = p.pl.rooms.RoomStamped(p.dev.ctx, devices.Stamp{Change: last, Generation: ni.GetGeneration()},
				p.inputsSeq, node, holds, sc.member, sc.shared, p.perNode(), sc.sig)
		} else if in := p.inputs(); in != nil {
			room, err = p.pl.rooms.Room(p.dev.ctx, in, node, holds, sc.member, sc.shared, p.perNode(), sc.sig)
		}
		if err != nil {
			if p.devErr == nil {
				p.devErr = err
			}
			room = 0
		}
		if room == 0 {
			fits[s] = false
			continue
		}
		if !limited || room < limit {
			limit, limited = room, true
		}
	}
	return limit, limited
}

// deviceStatus is the wait of a gang whose devices cannot be counted (nil when they can, or
// none are requested).
func (p *cycle) deviceStatus() *fwk.Status {
	if p.devErr == nil {
		return nil
	}
	p.logger.V(4).Info("gangpack.pinGang.devices_unknown", "pod", klog.KObj(p.pod), "gang", p.info.Key, "err", p.devErr)
	return fwk.NewStatus(fwk.Unschedulable, msg.DevicesUnknown(p.info.Key, p.devErr))
}

// classes lists the device classes the gang's claims request, sorted.
func (g *gangDevices) classes() []string {
	set := map[string]struct{}{}
	add := func(claims []*resourceapi.ResourceClaim) {
		for _, c := range claims {
			for _, r := range c.Spec.Devices.Requests {
				if r.Exactly != nil {
					set[r.Exactly.DeviceClassName] = struct{}{}
				}
				for _, sub := range r.FirstAvailable {
					set[sub.DeviceClassName] = struct{}{}
				}
			}
		}
	}
	for _, sc := range g.claims {
		if sc != nil {
			add(sc.member)
			add(sc.shared)
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// perNode is the most members of the gang one node may take: one when they stay apart.
func (p *cycle) perNode() int {
	if p.gang.Apart {
		return 1
	}
	return max(p.gang.Need, 1)
}
