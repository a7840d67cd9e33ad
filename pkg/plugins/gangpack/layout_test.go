package gangpack

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/moirai-internal/ome-scheduler/internal/filegraph"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/internal/ledger"
)

// The package layout of docs/design.md §17, checked: which of the plugin's packages each
// internal package may import, that the scheduler's side never imports the CLI's explain
// package (only its wire document), and that the ledger hands out none of its containers.
func TestLayout(t *testing.T) {
	const self = "github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack"
	allowed := map[string][]string{
		"gang":    {"msg"},
		"devices": nil,
		"msg":     nil,
		"metrics": nil,
		"pace":    nil,
		"ledger":  {"gang", "msg", "metrics"},
		"quality": {"gang", "metrics"},
		"plan":    {"devices", "gang", "msg", "metrics", "quality"},
		"preempt": {"gang", "msg", "metrics"},
	}
	dirs, err := os.ReadDir("internal")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		may, known := allowed[d.Name()]
		if !known {
			t.Errorf("internal/%s has no dependency rule here", d.Name())
			continue
		}
		for f, paths := range productionImports(t, filepath.Join("internal", d.Name())) {
			for _, path := range paths {
				rest, ok := strings.CutPrefix(path, self)
				if !ok {
					continue
				}
				dep := strings.TrimPrefix(rest, "/internal/")
				if rest == "" || !slices.Contains(may, dep) {
					t.Errorf("%s imports %s; internal/%s may import only %v of the plugin", f, path, d.Name(), may)
				}
			}
		}
	}
	schedulerSkipsExplain(t, self)
	typ := reflect.TypeOf(ledger.Ledger{})
	for i := 0; i < typ.NumField(); i++ {
		if f := typ.Field(i); f.IsExported() {
			t.Errorf("ledger.Ledger exports its field %s: only its methods may change it", f.Name)
		}
	}
}

// schedulerSkipsExplain checks that the scheduler binary, the adapter and the wire document
// do not import the explain package, so `kubectl ome`'s planning, what-if and rendering stay
// out of the scheduler's import graph (the internal packages never import it: see above).
func schedulerSkipsExplain(t *testing.T, self string) {
	t.Helper()
	for _, dir := range []string{".", "explain/wire", "../../../cmd/ome-scheduler"} {
		for f, paths := range productionImports(t, dir) {
			if slices.Contains(paths, self+"/explain") {
				t.Errorf("%s imports %s/explain: the scheduler may import only %[2]s/explain/wire", f, self)
			}
		}
	}
}

// productionImports maps every non-test Go file of dir to the paths it imports.
func productionImports(t *testing.T, dir string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range file.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			out[f] = append(out[f], path)
		}
	}
	return out
}

// The planning package's files (docs/design.md §17): no two files call each other beyond the
// pairs listed here, and a cycle is built in one place, newCycle. The same analysis runs as
// `go run ./hack/filegraph ./pkg/plugins/gangpack/internal/plan`.
func TestLayoutPlanFiles(t *testing.T) {
	mutual := map[string]bool{ // the pairs that remain; a new one fails
		"choose.go <-> deferred.go":        true, // choose defers a spread anchor, which obeys the hold cap
		"degraded.go <-> lacks.go":         true, // a degraded gang asks whether room is coming
		"partners_plan.go <-> planning.go": true, // a group is planned from Plan, with a cycle per partner
		"planning.go <-> revalidate.go":    true, // revalidate reads the planner's victims
		"reservations.go <-> resume.go":    true, // a resumed gang keeps its nominated slots
	}
	g, err := filegraph.Load(filepath.Join("internal", "plan"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range g.Mutual() {
		if !mutual[p.String()] {
			t.Errorf("%s call each other (%v; %v): new mutual dependency in plan/", p, g.Refs[p.A][p.B], g.Refs[p.B][p.A])
		}
	}
	lits := g.Literals["cycle"]
	if len(lits) == 0 {
		t.Error("no cycle literal found in plan/: is newCycle still the constructor?")
	}
	for _, l := range lits {
		if l.Func != "newCycle" {
			t.Errorf("%s builds a cycle in %s: only newCycle builds one", l.Pos, l.Func)
		}
	}
}
