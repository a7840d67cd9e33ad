package heapdump

import (
	"sort"
	"strings"
)

// Find returns the index of the object holding address p (interior pointers included), or -1.
func (d *Dump) Find(p uint64) int {
	objs := d.Objects
	i := sort.Search(len(objs), func(i int) bool { return objs[i].Addr+objs[i].Size > p })
	if i < len(objs) && objs[i].Addr <= p {
		return i
	}
	return -1
}

// Stack returns the allocation stack of object i (nil when the profiler did not sample it).
func (d *Dump) Stack(i int) []string {
	b, ok := d.Sampled[d.Objects[i].Addr]
	if !ok {
		return nil
	}
	return d.Stacks[b]
}

// AllocatedUnder reports whether object i was sampled with fn on its allocation stack.
func (d *Dump) AllocatedUnder(i int, fn string) bool {
	for _, f := range d.Stack(i) {
		if strings.Contains(f, fn) {
			return true
		}
	}
	return false
}

// Paths walks pointers from the roots breadth first, never entering an object for which cut
// returns true. It returns each object's parent on a shortest path (-1 for an object a root
// points at, -2 for an unreachable one) and, for reachable objects, the index of that root.
func (d *Dump) Paths(cut func(i int) bool) (parent, root []int) {
	parent, root = make([]int, len(d.Objects)), make([]int, len(d.Objects))
	for i := range parent {
		parent[i] = -2
	}
	var queue []int
	visit := func(p uint64, from, r int) {
		if i := d.Find(p); i >= 0 && parent[i] == -2 && (cut == nil || !cut(i)) {
			parent[i], root[i] = from, r
			queue = append(queue, i)
		}
	}
	for r, rt := range d.Roots {
		for _, p := range rt.Ptrs {
			visit(p, -1, r)
		}
	}
	for len(queue) > 0 {
		i := queue[0]
		queue = queue[1:]
		for _, p := range d.Objects[i].Ptrs {
			visit(p, i, root[i])
		}
	}
	return parent, root
}

// ReachableBytes sums the sizes of the objects reachable from the roots.
func (d *Dump) ReachableBytes(cut func(i int) bool) uint64 {
	parent, _ := d.Paths(cut)
	var n uint64
	for i, p := range parent {
		if p != -2 {
			n += d.Objects[i].Size
		}
	}
	return n
}

// Retained is how many bytes stay reachable only through objects allocated under fn: the
// reachable heap minus the heap still reachable when those objects are cut out.
func (d *Dump) Retained(fn string) uint64 {
	return d.ReachableBytes(nil) - d.ReachableBytes(func(i int) bool { return d.AllocatedUnder(i, fn) })
}

// Chain is one way objects are kept alive: the holders from the object's parent up to a root,
// each named by its allocation site, and how many matching objects it keeps.
type Chain struct {
	Holders []string
	Root    string
	Count   int
}

// Chains groups the reachable objects allocated under fn by their shortest path to a root
// (at most depth holders), most common first.
func (d *Dump) Chains(fn string, depth int) []Chain {
	parent, root := d.Paths(nil)
	by := map[string]*Chain{}
	for i := range d.Objects {
		if parent[i] == -2 || !d.AllocatedUnder(i, fn) {
			continue
		}
		c := Chain{Root: d.Roots[root[i]].Desc}
		for j := parent[i]; j >= 0 && len(c.Holders) < depth; j = parent[j] {
			c.Holders = append(c.Holders, d.Site(j))
		}
		key := strings.Join(c.Holders, "\n") + "\n" + c.Root
		if by[key] == nil {
			by[key] = &c
		}
		by[key].Count++
	}
	out := make([]Chain, 0, len(by))
	for _, c := range by {
		out = append(out, *c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Count > out[j].Count })
	return out
}

// Site names object i by the first frames of its allocation stack outside the runtime and
// the generated deep-copy and decoding code ("?" when it was not sampled).
func (d *Dump) Site(i int) string {
	var fs []string
	for _, f := range d.Stack(i) {
		if strings.HasPrefix(f, "runtime.") || strings.HasPrefix(f, "internal/") || strings.Contains(f, "DeepCopy") {
			continue
		}
		if fs = append(fs, f); len(fs) == 2 {
			break
		}
	}
	if len(fs) == 0 {
		return "?"
	}
	return strings.Join(fs, " < ")
}
