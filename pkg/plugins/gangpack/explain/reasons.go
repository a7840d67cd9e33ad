package explain

import (
	"fmt"
	"sort"
	"strings"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/gang"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/msg"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/plan"
)

// UnknownSuffix ends a reason judged without the scheduler's reservations.
const UnknownSuffix = " (reservations unknown: other forming gangs' reserved room is not counted)"

// chosenReason says why the gang goes where it goes, or, in the scheduler's own words, why it
// waits.
func chosenReason(ex *plan.Explanation, known bool) string {
	suffix := ""
	if !known && !ex.Gated {
		suffix = UnknownSuffix
	}
	if ex.Domain == "" {
		if ex.Status == nil {
			return "no decision" + suffix
		}
		return ex.Status.Message() + suffix
	}
	room := ex.Plans[ex.Domain].Room
	switch ex.Source {
	case "existing":
		return fmt.Sprintf("the gang is pinned to %s (room for %d of %d members)", ex.Domain, room, ex.Need) + suffix
	case "adopted":
		return fmt.Sprintf("the gang's placed members are in %s (room for %d of %d more members)", ex.Domain, room, ex.Need) + suffix
	case "deferred":
		first := fmt.Sprintf("best fit scores %s (room %d) first", ex.Domain, room)
		if ex.Preferences != nil {
			first = fmt.Sprintf("%s (preference %d, room %d) scores first: the members' preference, then best fit", ex.Domain, ex.Preferences[ex.Domain], room)
		}
		return fmt.Sprintf("hard topology spread: the filters choose among the %d domains with room for %d members at Reserve; %s",
			ex.Fitting, ex.Need, first) + suffix
	case "preferred":
		return fmt.Sprintf("preferred: the members prefer %s (preference %d: their preferred node-affinity weights there) over best fit %s (preference %d, room %d); %s has room for %d members",
			ex.Domain, ex.Preferences[ex.Domain], ex.BestFit, ex.Preferences[ex.BestFit], ex.Plans[ex.BestFit].Room, ex.Domain, room) + suffix
	}
	if ex.Preferences != nil {
		return fmt.Sprintf("best fit among the most preferred (preference %d): %s has the least room (%d) of the %d domains with room for %d members",
			ex.Preferences[ex.Domain], ex.Domain, room, ex.Fitting, ex.Need) + suffix
	}
	return fmt.Sprintf("best fit: %s has the least room (%d) of the %d domains with room for %d members", ex.Domain, room, ex.Fitting, ex.Need) + suffix
}

// domainsOf describes every domain of the gang's key, sorted by name.
func domainsOf(ex *plan.Explanation, info gang.Info, r *Reservations) []Domain {
	resources := requested(ex)
	others := reservedByOthers(r, info.Key)
	free := map[string]map[string]int64{}
	for _, n := range ex.Nodes { // free outside reservations, plus what others reserve
		if free[n.Domain] == nil {
			free[n.Domain] = map[string]int64{}
		}
		for _, res := range resources {
			free[n.Domain][res] += max(n.Free[res]+others[n.Name][res], 0)
		}
	}
	out := make([]Domain, 0, len(ex.Plans))
	for name, dp := range ex.Plans {
		members, parts := reservedIn(r, info.Key, dp.Nodes, name)
		d := Domain{Name: name, Nodes: len(dp.Nodes), Free: free[name], MemberRoom: dp.Room, NodeRoom: ex.MemberRooms[name],
			Reserved: members, Fits: dp.Room >= ex.Need && len(dp.Candidates) > 0}
		if v, ok := ex.Preferences[name]; ok && d.Fits {
			d.Preference = &v
		}
		d.Reason = domainReason(ex, &d, parts)
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// domainReason is one domain's verdict.
func domainReason(ex *plan.Explanation, d *Domain, reservedBy []string) string {
	room := fmt.Sprintf("room for %d of %d members", d.MemberRoom, ex.Need)
	if d.Preference != nil {
		room += fmt.Sprintf(", preference %d", *d.Preference)
	}
	switch {
	case ex.Gated:
		return "not planned: the gang waits (see the reason below)"
	case d.Name == ex.Domain:
		return "chosen: " + room
	case d.Fits && ex.Domain != "" && ex.Preferences != nil:
		return fmt.Sprintf("fits (%s); %s is preferred, then best fit", room, ex.Domain)
	case d.Fits && ex.Domain != "":
		return fmt.Sprintf("fits (%s); best fit prefers %s", room, ex.Domain)
	case d.Fits:
		return "fits (" + room + ")"
	case ex.RawRooms[d.Name] >= ex.Need && len(reservedBy) > 0:
		return fmt.Sprintf("room for %d of %d members outside reservations; %s", d.MemberRoom, ex.Need, msg.ReservedBy(reservedBy, 0))
	case d.NodeRoom >= ex.Need:
		return fmt.Sprintf("its nodes take %d members one by one, but the whole gang cannot form here (member shapes and node fit)", d.NodeRoom)
	}
	return fmt.Sprintf("room for %d of %d members", min(d.NodeRoom, ex.Need), ex.Need)
}

// reservedIn counts the members other forming gangs reserve on the domain's nodes, with one
// "gang reserves N members on M nodes of D" text per gang.
func reservedIn(r *Reservations, self string, nodes []string, domain string) (int, []string) {
	if r == nil {
		return 0, nil
	}
	in := make(map[string]struct{}, len(nodes))
	for _, n := range nodes {
		in[n] = struct{}{}
	}
	total := 0
	var parts []string
	for _, p := range r.Pins {
		if !p.Forming || p.Gang == self {
			continue
		}
		members, on := 0, 0
		for _, s := range p.Reserved {
			if _, ok := in[s.Node]; ok && s.Members > 0 {
				members += s.Members
				on++
			}
		}
		if members > 0 {
			total += members
			parts = append(parts, msg.GangReserves(p.Gang, members, on, domain))
		}
	}
	return total, parts
}

// requested lists the resources the gang's shapes request, sorted.
func requested(ex *plan.Explanation) []string {
	set := map[string]struct{}{}
	for _, s := range ex.Gang.Shapes {
		for r := range s {
			set[r] = struct{}{}
		}
	}
	out := make([]string, 0, len(set))
	for r := range set {
		out = append(out, r)
	}
	sort.Strings(out)
	return out
}

// Primary is the resource a table shows: the first extended resource requested (a name with
// a "/"), else cpu.
func Primary(resources map[string]int64) string {
	names := make([]string, 0, len(resources))
	for r := range resources {
		names = append(names, r)
	}
	sort.Strings(names)
	for _, r := range names {
		if strings.Contains(r, "/") {
			return r
		}
	}
	return "cpu"
}

// reservedByOthers sums, per node, the resources forming gangs other than self reserve.
func reservedByOthers(r *Reservations, self string) map[string]map[string]int64 {
	out := map[string]map[string]int64{}
	if r == nil {
		return out
	}
	for _, p := range r.Pins {
		if !p.Forming || p.Gang == self {
			continue
		}
		for _, s := range p.Reserved {
			if out[s.Node] == nil {
				out[s.Node] = map[string]int64{}
			}
			for name, q := range s.Each {
				out[s.Node][name] += q * int64(s.Members)
			}
		}
	}
	return out
}
