package gang

// The placement annotations OMEGangPack puts on the Binding of every gang member it binds
// (bind.go); the API server copies them onto the pod in the same request. They are an
// interface for routers and operators: docs/reference.md, "Placement annotations".
const (
	// DomainAnnotation is the value of the gang's topology key on the member's node.
	DomainAnnotation = "ome.io/domain"
	// DomainKeyAnnotation is the gang's topology key.
	DomainKeyAnnotation = "ome.io/domain-key"
	// GroupDomainAnnotation is, for a member of a partner placement group, the value of the
	// group key on the member's node: the group domain.
	GroupDomainAnnotation = "ome.io/placement-group-domain"
	// GroupDomainKeyAnnotation is the group key of the member's placement group.
	GroupDomainKeyAnnotation = "ome.io/placement-group-domain-key"
)
