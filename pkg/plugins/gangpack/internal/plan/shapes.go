package plan

import (
	"slices"

	v1 "k8s.io/api/core/v1"
	v1helper "k8s.io/kubernetes/pkg/apis/core/v1/helper"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
	"github.com/moirai-internal/ome-scheduler/pkg/topology"
)

// maxShapes caps the distinct member shapes one planning works with: planning costs grow
// with shapes times nodes, and a PodGroup's members are tenant-controlled.
var maxShapes = 16

// shapeClass is the templates of one shape (or, past maxShapes, of several merged shapes).
type shapeClass struct {
	key     string             // gang.ShapeKey of rep, prefixed with "merged:" for a merged group
	rep     *v1.Pod            // whose node constraints the group is planned with
	request topology.Resources // the shape (elementwise maximum over a merged group)
	current bool               // holds the pod being scheduled
	count   int                // templates other than the current pod
}

// buildGang groups the templates into shapes for the planner. Past maxShapes, the shapes with
// the fewest members are planned as one shape: the largest request of each resource, with the
// node constraints of its largest member. The plan is then less tight, never wrong: every
// member still passes the framework's filters on its own.
func (p *cycle) buildGang() {
	groups := shapeClasses(p.templates, p.pl.shapes.key)
	if len(groups) > maxShapes {
		groups = mergeClasses(groups, maxShapes)
	}
	g := topology.Gang{Need: p.need, Apart: gang.Apart(p.templates)}
	for i, sg := range groups {
		f := gang.NewPodFit(sg.rep)
		f.Request = sg.request
		p.shapeFits = append(p.shapeFits, f)
		for r := range f.Request {
			if !slices.Contains(p.resources, r) {
				p.resources = append(p.resources, r)
			}
		}
		g.Shapes = append(g.Shapes, f.Request)
		g.Siblings = append(g.Siblings, sg.count)
		if sg.current {
			g.Current = i
		}
	}
	p.gang = g
	p.classes, p.termsRead = groups, false
	p.readDevices()
	p.primary, p.hasPrimary = primaryResource(g.Shapes)
}

// shapeClasses groups templates by shape (keyOf: gang.ShapeKey, cached), in order of first
// appearance (the current pod's shape first).
func shapeClasses(templates []*v1.Pod, keyOf func(*v1.Pod) string) []shapeClass {
	index := map[string]int{}
	var groups []shapeClass
	for i, t := range templates {
		k := keyOf(t)
		s, ok := index[k]
		if !ok {
			s = len(groups)
			index[k] = s
			groups = append(groups, shapeClass{key: k, rep: t, request: gang.Request(t)})
		}
		if i == 0 {
			groups[s].current = true
		} else {
			groups[s].count++
		}
	}
	return groups
}

// mergeClasses keeps the current pod's shape and the limit-2 most common other shapes, and
// merges the rest into one.
func mergeClasses(groups []shapeClass, limit int) []shapeClass {
	rest := slices.Clone(groups[1:])
	slices.SortStableFunc(rest, func(a, b shapeClass) int { return b.count - a.count })
	kept := append([]shapeClass{groups[0]}, rest[:limit-2]...)
	merged := shapeClass{request: topology.Resources{}}
	var repSize int64 = -1
	for _, sg := range rest[limit-2:] {
		merged.count += sg.count
		var size int64
		for r, q := range sg.request {
			merged.request[r] = max(merged.request[r], q)
			size += q
		}
		if size > repSize {
			merged.rep, repSize = sg.rep, size
		}
	}
	// The key names the representative's node constraints: two gangs whose merged maxima are
	// equal but whose representatives differ must not share cached plans (signatureOf).
	merged.key = "merged:" + gang.ShapeKey(merged.rep)
	return append(kept, merged)
}

// primaryResource returns the extended resource with the largest per-member request among
// the shapes (ties by name); ok is false when no shape requests an extended resource.
func primaryResource(shapes []topology.Resources) (string, bool) {
	best, bestQ := "", int64(0)
	for _, s := range shapes {
		for r, q := range s {
			if q <= 0 || !v1helper.IsExtendedResourceName(v1.ResourceName(r)) {
				continue
			}
			if q > bestQ || (q == bestQ && r < best) {
				best, bestQ = r, q
			}
		}
	}
	return best, best != ""
}
