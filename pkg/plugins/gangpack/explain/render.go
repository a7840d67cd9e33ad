package explain

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
)

// WriteTable prints the explanation as kubectl-style tables: one line per domain, then the
// decision and its reason.
func (r *Result) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintf(tw, "PodGroup %s, topology key %q: minMember %d, placed %d, need %d\n", r.PodGroup, r.TopologyKey, r.MinMember, r.Placed, r.Need)
	if !r.ReservationsKnown {
		fmt.Fprintln(tw, "reservations unknown: the scheduler's endpoint was not reachable (see --scheduler-url)")
	}
	if len(r.Domains) > 0 {
		fmt.Fprintln(tw, "DOMAIN\tNODES\tFREE\tMEMBER ROOM\tRESERVED\tFITS\tREASON")
		for _, d := range r.Domains {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%s\t%s\t%s\n", d.Name, d.Nodes, freeText(d.Free)+devicesText(d.Devices), d.MemberRoom,
				r.reservedText(d.Reserved), yesNo(d.Fits), d.Reason)
		}
	}
	chosen := r.ChosenDomain
	if chosen == "" {
		chosen = "<none>"
	}
	fmt.Fprintf(tw, "\nChosen domain: %s\nReason: %s\n", chosen, r.Reason)
	return tw.Flush()
}

func (r *Result) reservedText(n int) string {
	if !r.ReservationsKnown {
		return "unknown"
	}
	return fmt.Sprint(n)
}

// WriteTable prints the fragmentation view: one line per domain.
func (r *DomainsResult) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintf(tw, "Topology key %q, member shape %s", r.TopologyKey, freeText(r.Shape))
	if r.AntiAffinityPerNode {
		fmt.Fprint(tw, ", one member per node")
	}
	fmt.Fprintln(tw)
	if !r.ReservationsKnown {
		fmt.Fprintln(tw, "reservations unknown: the scheduler's endpoint was not reachable (see --scheduler-url)")
	}
	res := r.Resource
	fmt.Fprintf(tw, "DOMAIN\tNODES\tALLOCATABLE %s\tFREE\tRESERVED\tBOUND GANGS\tLARGEST GANG\tSTRANDED\n", res)
	for _, d := range r.Domains {
		reserved := "unknown"
		if r.ReservationsKnown {
			reserved = fmt.Sprintf("%d (%d members)", d.ReservedUnits, d.Reserved)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\t%d\t%d\t%d\n", d.Name, d.Nodes, d.Allocatable, d.Free, reserved, d.BoundGangs, d.LargestGang, d.Stranded)
	}
	return tw.Flush()
}

func freeText(m map[string]int64) string {
	if len(m) == 0 {
		return "-"
	}
	return pairs(m, func(n string, v int64) string {
		if n == "cpu" {
			return fmt.Sprintf("cpu=%dm", v)
		}
		return fmt.Sprintf("%s=%d", n, v)
	})
}

// pairs formats a map's entries with f, by key, comma-separated.
func pairs[V any](m map[string]V, f func(string, V) string) string {
	parts := make([]string, 0, len(m))
	for _, n := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, f(n, m[n]))
	}
	return strings.Join(parts, ",")
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// devicesText is a domain's free DRA devices per driver, as " devices: driver=n,…" ("" for
// none).
func devicesText(m map[string]int) string {
	if len(m) == 0 {
		return ""
	}
	return " devices: " + pairs(m, func(n string, v int) string { return fmt.Sprintf("%s=%d", n, v) })
}
