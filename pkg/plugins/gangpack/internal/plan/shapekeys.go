package plan

import (
	"sync"
	"unique"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
)

// shapeKeyLimit bounds the shape keys kept: past it the cache starts over.
const shapeKeyLimit = 16384

// shapeKeys keeps gang.ShapeKey per pod, valid while the pod's UID, resourceVersion and node
// name are the same. Every member's planning groups its gang's unplaced members by shape
// (buildGang), and a key is a JSON encoding of the pod's scheduling constraints: uncached,
// a gang of 1,000 cost a thousand encodings in each of its members' PreFilters. Keys are
// interned, so the members of one shape share one string. A nil cache computes every key.
// Safe for concurrent use.
type shapeKeys struct {
	mu sync.Mutex
	m  map[types.UID]shapeKeyEntry
}

type shapeKeyEntry struct {
	version, node string
	key           unique.Handle[string]
}

func newShapeKeys() *shapeKeys { return &shapeKeys{m: map[types.UID]shapeKeyEntry{}} }

// key returns gang.ShapeKey(p). A pod without UID or resourceVersion (built in memory, not
// read from the API) is not cached.
func (c *shapeKeys) key(p *v1.Pod) string {
	if c == nil || p.UID == "" || p.ResourceVersion == "" {
		return gang.ShapeKey(p)
	}
	c.mu.Lock()
	e, ok := c.m[p.UID]
	c.mu.Unlock()
	if ok && e.version == p.ResourceVersion && e.node == p.Spec.NodeName {
		return e.key.Value()
	}
	h := unique.Make(gang.ShapeKey(p))
	c.mu.Lock()
	if len(c.m) >= shapeKeyLimit {
		clear(c.m)
	}
	c.m[p.UID] = shapeKeyEntry{version: p.ResourceVersion, node: p.Spec.NodeName, key: h}
	c.mu.Unlock()
	return h.Value()
}
