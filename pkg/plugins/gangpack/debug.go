package gangpack

import (
	"encoding/json"
	"sync"
	"sync/atomic"

	"k8s.io/component-base/configz"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/explain/wire"
)

// The pins and room reservations live only in the scheduler's memory; `kubectl ome` reads
// them from the secure port. kube-scheduler offers plugins no handler of their own there, but
// it serves /configz (behind the same authentication and authorization as /metrics: `get` on
// the non-resource URL /configz), which marshals every registered entry at each request. The
// plugin registers one entry, wire.DebugKey, whose value is marshalled from the ledger on
// every read (docs/reference.md, "Reservations endpoint").

var (
	debugOnce sync.Once
	// debugPlugin is the plugin instance the entry shows: the latest built (one per process
	// in the binary).
	debugPlugin atomic.Pointer[GangPack]
)

// debugView marshals the current plugin's pins when /configz is read.
type debugView struct{}

func (debugView) MarshalJSON() ([]byte, error) {
	pl := debugPlugin.Load()
	if pl == nil {
		return json.Marshal(wire.Reservations{Pins: []wire.Pin{}, Assumed: []wire.AssumedPod{}})
	}
	return json.Marshal(wire.Wire(pl.ledger.Holds(), pl.ledger.AssumedMembers(), pl.ledger.Active(), pl.args))
}

// serveDebug makes pl the plugin /configz shows.
func serveDebug(pl *GangPack) {
	debugPlugin.Store(pl)
	debugOnce.Do(func() {
		cz, err := configz.New(wire.DebugKey)
		if err != nil {
			pl.logger.Error(err, "Cannot serve the reservations entry of /configz")
			return
		}
		cz.Set(debugView{})
	})
}
