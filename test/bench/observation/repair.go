package observation

// Repair is workload NodeFailure's record (test/bench/nodefailure.go): 5 % of the nodes
// fail once the cluster is full of bound gangs, their pods are force-deleted and each gang
// member lost gets a replacement, as a workload controller would create it. Replacements are
// counted by what the survivors' domain (the one domain of the gang's members still bound)
// offered when the nodes failed: free room for every replacement ("room"), room only once
// lower-priority pods there are evicted ("victims"), or neither ("none"); gangs that lost
// every member have no survivors' domain.
type Repair struct {
	Seed             uint64 `json:"seed"`
	Nodes            int    `json:"nodes"`
	NodesFailed      int    `json:"nodesFailed"`
	PodsForceDeleted int    `json:"podsForceDeleted"`
	GangsHit         int    `json:"gangsHit"`
	Replacements     int    `json:"replacements"`
	Bound            int    `json:"replacementsBound"`
	// Replacement created (the create call returned) -> bound (spec.nodeName seen).
	P50ms float64 `json:"p50ms"`
	P99ms float64 `json:"p99ms"`
	Maxms float64 `json:"maxms"`
	// Replacements, and those bound in the survivors' domain, by what that domain offered.
	Room           int `json:"room"`
	RoomInDomain   int `json:"roomInDomain"`
	Victims        int `json:"victims"`
	VictimInDomain int `json:"victimsInDomain"`
	NoRoom         int `json:"noRoom"`
	NoRoomInDomain int `json:"noRoomInDomain"`
	NoSurvivors    int `json:"noSurvivors"`
	// Deleted during the repair: survivors (bound members of the gangs hit), members of
	// other gangs, standalone pods (the lower-priority room a repair may reclaim).
	SurvivorsEvicted  int     `json:"survivorsEvicted"`
	OtherGangsEvicted int     `json:"otherGangMembersEvicted"`
	StandaloneEvicted int     `json:"standaloneEvicted"`
	GangsSplit        int     `json:"gangsSplit"`   // gangs hit, bound across domains at the end
	GangsWaiting      int     `json:"gangsWaiting"` // gangs hit with a replacement still unbound at the end
	Seconds           float64 `json:"seconds"`      // nodes failed -> last replacement bound
	GaveUp            bool    `json:"gaveUp"`       // no bind for the quiet period with replacements unbound
}
