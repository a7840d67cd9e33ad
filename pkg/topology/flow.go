package topology

// flowNet is the matching network behind "how many members fit these nodes": a source, pre
// nodes the caller wires on the source side, one node per member shape, one per node class
// and a sink. Shape s links to class c when members of shape s fit the class's nodes; class c
// links to the sink with the members its nodes hold. Canonical numbering (source 0, the pre
// nodes, the shapes, the classes, the sink) keeps maxFlow's search order, and so the flow it
// finds, the same for every caller.
type flowNet struct {
	capm   [][]int64
	pre    int
	shapes int
	sink   int
}

// flowSource is the source's node number in every flowNet.
const flowSource = 0

func newFlowNet(pre, shapes, classes int) *flowNet {
	sink := 1 + pre + shapes + classes
	capm := make([][]int64, sink+1)
	for i := range capm {
		capm[i] = make([]int64, sink+1)
	}
	return &flowNet{capm: capm, pre: pre, shapes: shapes, sink: sink}
}

// shape and class are the node numbers of shape s and class c.
func (f *flowNet) shape(s int) int { return 1 + f.pre + s }
func (f *flowNet) class(c int) int { return 1 + f.pre + f.shapes + c }

// edge sets the capacity from node u to node v.
func (f *flowNet) edge(u, v int, k int64) { f.capm[u][v] = k }

// fit links every shape s with fits[s] to class c with capacity k; shapes past the end of
// fits do not fit.
func (f *flowNet) fit(c int, fits []bool, k int64) {
	for s := 0; s < f.shapes && s < len(fits); s++ {
		if fits[s] {
			f.capm[f.shape(s)][f.class(c)] = k
		}
	}
}

// room sets how many members class c holds: its capacity to the sink.
func (f *flowNet) room(c int, k int64) { f.capm[f.class(c)][f.sink] = k }

// run pushes up to limit more units from the source to the sink and returns how many it
// pushed; it may be called again after more capacity is set.
func (f *flowNet) run(limit int64) int64 { return maxFlow(f.capm, flowSource, f.sink, limit) }

// used is how many units flow through class c into the sink so far: the sink is never
// left again, so its reverse capacity to the class counts exactly that.
func (f *flowNet) used(c int) int { return int(f.capm[f.sink][f.class(c)]) }

// spread hands the units that flow through a class to its nodes in order, at most room to
// each, until none are left: give(i, k) gives k to the class's i-th node.
func spread(units, room, nodes int, give func(i, k int)) {
	for i := 0; i < nodes && units > 0; i++ {
		k := min(units, room)
		give(i, k)
		units -= k
	}
}

// maxFlow runs Edmonds-Karp on an adjacency capacity matrix (modified in place) and stops as
// soon as limit units flow.
func maxFlow(capm [][]int64, s, t int, limit int64) int64 {
	n := len(capm)
	var flow int64
	parent := make([]int, n)
	queue := make([]int, 0, n)
	for flow < limit {
		for i := range parent {
			parent[i] = -1
		}
		parent[s] = s
		queue = append(queue[:0], s)
		for len(queue) > 0 && parent[t] < 0 {
			u := queue[0]
			queue = queue[1:]
			for v := 0; v < n; v++ {
				if parent[v] < 0 && capm[u][v] > 0 {
					parent[v] = u
					queue = append(queue, v)
				}
			}
		}
		if parent[t] < 0 {
			break
		}
		aug := limit - flow
		for v := t; v != s; v = parent[v] {
			if c := capm[parent[v]][v]; c < aug {
				aug = c
			}
		}
		for v := t; v != s; v = parent[v] {
			u := parent[v]
			capm[u][v] -= aug
			capm[v][u] += aug
		}
		flow += aug
	}
	return flow
}
