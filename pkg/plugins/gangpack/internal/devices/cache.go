package devices

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// RoomCache remembers Room's answers per member shape and node until what the answer
// depends on changes: the node's slices (name, resource version, pool generation, device
// count), the allocated devices of their pools, the node-independent slices, the device
// classes and, when node-independent slices exist, the node's labels. Planning asks every
// node of the cluster for a gang with claims; between two plannings few nodes' devices
// change, so most answers come from here. Safe for concurrent use.
type RoomCache struct {
	mu     sync.Mutex
	shapes map[string]map[string]cachedRoom // shape signature → node → answer
	order  []string                         // shapes in insertion order, for eviction
}

type cachedRoom struct {
	token string
	room  int
	err   error
}

// maxCachedShapes bounds the member shapes remembered (the oldest is dropped first).
const maxCachedShapes = 64

// NewRoomCache returns an empty cache.
func NewRoomCache() *RoomCache { return &RoomCache{shapes: map[string]map[string]cachedRoom{}} }

// Signature identifies a member shape for the cache: its claims' specs, the shared claims'
// allocations, and the per-node limit asked.
func Signature(claims, shared []*resourceapi.ResourceClaim, limit int) string {
	type sharedSig struct {
		Name       string
		Spec       resourceapi.ResourceClaimSpec
		Allocation *resourceapi.AllocationResult
	}
	var specs []resourceapi.ResourceClaimSpec
	for _, c := range claims {
		if c != nil {
			specs = append(specs, c.Spec)
		}
	}
	var sh []sharedSig
	for _, c := range shared {
		if c != nil {
			sh = append(sh, sharedSig{Name: c.Namespace + "/" + c.Name, Spec: c.Spec, Allocation: c.Status.Allocation})
		}
	}
	b, _ := json.Marshal(struct {
		C []resourceapi.ResourceClaimSpec
		S []sharedSig
		L int
	}{specs, sh, limit})
	return string(b)
}

// Room is RoomWith through the cache; sig is Signature(claims, shared, limit).
func (c *RoomCache) Room(ctx context.Context, in *Inputs, node *v1.Node, holds []Hold, claims, shared []*resourceapi.ResourceClaim, limit int, sig string) (int, error) {
	if in == nil || node == nil {
		return RoomWith(ctx, in, node, holds, claims, shared, limit)
	}
	tok := in.token(node) + holdsToken(holds)
	c.mu.Lock()
	if e, ok := c.shapes[sig][node.Name]; ok && e.token == tok {
		c.mu.Unlock()
		return e.room, e.err
	}
	c.mu.Unlock()
	room, err := RoomWith(ctx, in, node, holds, claims, shared, limit)
	if ctx.Err() != nil {
		return room, err // a cancelled search is not an answer
	}
	c.store(sig, node.Name, cachedRoom{token: tok, room: room, err: err})
	return room, err
}

// Stamp is what a node's device room depends on besides the claims when every slice is one
// node's (Changes.Last ok): the last device change concerning the node, the node's NodeInfo
// generation (kube-scheduler's allocations in flight come and go with pods assumed on or
// forgotten from the node, which move it) and the holds set aside there.
type Stamp struct {
	Change     uint64
	Generation int64
}

// RoomStamped is Room keyed by stamp instead of the device view: an answer is reused while
// the stamp and holds are the same, and in (read only on a miss) gives the view to compute
// it and the last change the view reflects (Changes.Seq before it was read); nil in makes a
// miss an error. An answer from a view older than the stamp's change (read earlier in the
// cycle, before the node's change) is given but kept under the view's change, so the next
// lookup misses and asks a newer view.
func (c *RoomCache) RoomStamped(ctx context.Context, stamp Stamp, in func() (*Inputs, uint64), node *v1.Node, holds []Hold,
	claims, shared []*resourceapi.ResourceClaim, limit int, sig string) (int, error) {
	token := func(change uint64) string {
		return "stamp:" + strconv.FormatUint(change, 10) + "/" + strconv.FormatInt(stamp.Generation, 10) + holdsToken(holds)
	}
	c.mu.Lock()
	if e, ok := c.shapes[sig][node.Name]; ok && e.token == token(stamp.Change) {
		c.mu.Unlock()
		return e.room, e.err
	}
	c.mu.Unlock()
	view, seq := in()
	if view == nil {
		return 0, errors.New("devices.RoomStamped: the device view cannot be read")
	}
	room, err := RoomWith(ctx, view, node, holds, claims, shared, limit)
	if ctx.Err() != nil {
		return room, err // a cancelled search is not an answer
	}
	c.store(sig, node.Name, cachedRoom{token: token(min(stamp.Change, seq)), room: room, err: err})
	return room, err
}

// store records an answer. Callers do not hold c.mu.
func (c *RoomCache) store(sig, node string, e cachedRoom) {
	c.mu.Lock()
	defer c.mu.Unlock()
	nodes, ok := c.shapes[sig]
	if !ok {
		if len(c.order) >= maxCachedShapes {
			delete(c.shapes, c.order[0])
			c.order = c.order[1:]
		}
		nodes = map[string]cachedRoom{}
		c.shapes[sig], c.order = nodes, append(c.order, sig)
	}
	nodes[node] = e
}

// token is what Room's answer for node depends on besides the claims (see RoomCache).
func (in *Inputs) token(node *v1.Node) string {
	var b strings.Builder
	writeSlice := func(s *resourceapi.ResourceSlice) {
		b.WriteString(s.Name)
		b.WriteByte('@')
		b.WriteString(s.ResourceVersion)
		b.WriteByte('/')
		b.WriteString(strconv.FormatInt(s.Spec.Pool.Generation, 10))
		b.WriteByte('/')
		b.WriteString(strconv.Itoa(len(s.Spec.Devices)))
		b.WriteByte(';')
	}
	v := in.view(node.Name)
	for _, s := range v.slices {
		writeSlice(s)
	}
	b.WriteByte('|')
	ids := make([]string, 0, v.allocated.Len())
	for id := range v.allocated {
		ids = append(ids, id.String())
	}
	slices.Sort(ids)
	b.WriteString(strings.Join(ids, ","))
	b.WriteByte('|')
	b.WriteString(in.classToken())
	if len(in.shared) > 0 {
		b.WriteByte('|')
		b.WriteString(labels.Set(node.Labels).String())
	}
	return b.String()
}

// classToken names the device classes and their versions, computed once per Inputs.
func (in *Inputs) classToken() string {
	in.classOnce.Do(func() {
		if in.Classes == nil {
			return
		}
		list, err := in.Classes.List()
		if err != nil {
			in.classTok = "error:" + err.Error()
			return
		}
		parts := make([]string, 0, len(list))
		for _, c := range list {
			if c != nil {
				parts = append(parts, c.Name+"@"+c.ResourceVersion+"/"+strconv.FormatInt(c.Generation, 10))
			}
		}
		slices.Sort(parts)
		in.classTok = strings.Join(parts, ",")
	})
	return in.classTok
}

// holdsToken names the holds (their claims' specs and counts) for the cache.
func holdsToken(holds []Hold) string {
	if len(holds) == 0 {
		return ""
	}
	b, _ := json.Marshal(holds)
	return "|holds:" + string(b)
}
