// Package observation is the benchmark observer's per-workload record (docs/benchmarks.md).
package observation

// Result is one workload's observation: test/bench's observer writes it as JSON, benchtable
// reads it back. Runs is benchtable's count of runs folded into one row.
type Result struct {
	Name string `json:"name"` // BenchmarkPerfScheduling/<testcase>/<workload>
	// Counters: scheduler_schedule_attempts_total by result, OMEGangPack activations by
	// trigger and commitment unwinds, as "<family>/<label value>" ("<family>/<v1>/<v2>" for
	// two labels); preemption counters; histograms as "<family>/sum" and "<family>/count".
	Counters map[string]float64 `json:"counters"`
	// Waits counts the PodScheduled=False messages pods went through, by their first words.
	Waits          map[string]int `json:"waits"`
	Pods           int            `json:"pods"`
	PodsBound      int            `json:"podsBound"`
	Gangs          int            `json:"gangs"`
	GangsPlaced    int            `json:"gangsPlaced"`
	GangsSplit     int            `json:"gangsSplit"`
	GangsPartial   int            `json:"gangsPartial"` // some but not all members bound at the end
	OfflineBestFit int            `json:"offlineBestFit"`
	LiveGangs      int            `json:"liveGangs"`
	LiveGangsWhole int            `json:"liveGangsWhole"`
	LatencyP50ms   float64        `json:"gangLatencyP50ms"`
	LatencyP99ms   float64        `json:"gangLatencyP99ms"`
	LatencyMaxms   float64        `json:"gangLatencyMaxms"`
	SeqGangs       int            `json:"seqGangs"` // gangs created one at a time (namespaces seq-*)
	SeqP50ms       float64        `json:"seqGangLatencyP50ms"`
	SeqP99ms       float64        `json:"seqGangLatencyP99ms"`
	SeqMaxms       float64        `json:"seqGangLatencyMaxms"`
	// Preemptors: gangs in namespaces prio-high* (workload Preempt), last member created ->
	// last member bound, victims' eviction included.
	PreemptorGangs      int     `json:"preemptorGangs"`
	PreemptorP50ms      float64 `json:"preemptorGangLatencyP50ms"`
	PreemptorP99ms      float64 `json:"preemptorGangLatencyP99ms"`
	PreemptorMaxms      float64 `json:"preemptorGangLatencyMaxms"`
	PreemptorGangsSplit int     `json:"preemptorGangsSplit"` // preemptor gangs bound across domains
	// Bound gang members deleted (by the workload or a preemption): gangs that lost one or
	// more, gangs left partly evicted (some members deleted, others still bound at the end),
	// members deleted, GPUs the partly evicted gangs' survivors still hold.
	GangsEvicted          int   `json:"gangsEvicted"`
	GangsPartlyEvicted    int   `json:"gangsPartlyEvicted"`
	MembersEvicted        int   `json:"membersEvicted"`
	PartlyEvictedHeldGPUs int64 `json:"partlyEvictedHeldGPUs"`
	// Would-be placement groups (pods labelled bench.ome.io/placement-group, workloads
	// Partners*): groups, groups with every member bound, groups whose bound members span
	// more than one domain, and per placed group last member created -> last member bound.
	Groups       int     `json:"groups"`
	GroupsPlaced int     `json:"groupsPlaced"`
	GroupsApart  int     `json:"groupsApart"`
	GroupP50ms   float64 `json:"groupLatencyP50ms"`
	GroupP99ms   float64 `json:"groupLatencyP99ms"`
	GroupMaxms   float64 `json:"groupLatencyMaxms"`
	// Burst (pods in namespace burst, workload Burst): the run is from the first pod created
	// to the last pod bound; the mean is bound pods over the run; a window is 10 whole 1 s
	// bins of binds from the start, and the worst window's throughput is also given as a
	// fraction of the mean (target: no window below 0.2). Windows is 0 for a run under 10 s.
	BurstPods                 int     `json:"burstPods,omitempty"`
	BurstBound                int     `json:"burstBound,omitempty"`
	BurstRunSeconds           float64 `json:"burstRunSeconds,omitempty"`
	BurstMeanPerSecond        float64 `json:"burstMeanPerSecond,omitempty"`
	BurstWindows              int     `json:"burstWindows,omitempty"`
	BurstWorstWindowPerSecond float64 `json:"burstWorstWindowPerSecond,omitempty"`
	BurstWorstWindowAtSecond  int     `json:"burstWorstWindowAtSecond,omitempty"`
	BurstWorstWindowFraction  float64 `json:"burstWorstWindowFraction,omitempty"`
	BurstBindsPerSecond       []int   `json:"burstBindsPerSecond,omitempty"` // binds in each second from the start
	// BurstCreatedPerSecond and BurstFillDeletedPerSecond: burst pods created, and fill pods
	// seen deleted, in each second from the start (room comes back only with the deletions).
	BurstCreatedPerSecond     []int `json:"burstCreatedPerSecond,omitempty"`
	BurstFillDeletedPerSecond []int `json:"burstFillDeletedPerSecond,omitempty"`
	// Repair is workload NodeFailure's node-failure repair (nil for the other workloads).
	Repair       *Repair `json:"repair,omitempty"`
	FreeGPUs     int64   `json:"freeGPUs"`
	StrandedGPUs int64   `json:"strandedGPUs"`
	PeakRSSMiB   float64 `json:"peakRSSMiB"`
	RSSSource    string  `json:"rssSource"`
	Runs         int     `json:"-"`
}
