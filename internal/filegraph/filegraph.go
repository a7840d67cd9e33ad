// Package filegraph maps which files of one Go package call the functions and methods
// declared in which others, and finds the pairs of files that call each other. It is
// developer tooling (hack/filegraph, the plugin's layout test): no production code imports it.
//
// Names are resolved by the type checker over the package's own files, its imports stood in
// by empty packages: a use of a function or method declared in the package is attributed to
// the file declaring it (interface methods, fields and anything imported are not counted).
package filegraph

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	pathpkg "path"
	"path/filepath"
	"sort"
	"strings"
)

// Graph is one package's file references: Refs[a][b] lists the names declared in b that a
// calls (a != b).
type Graph struct {
	Files []string
	Refs  map[string]map[string][]string
	// Literals are the composite literals of each type name, by position (Literal).
	Literals map[string][]Literal
}

// Literal is one composite literal of a package type: where, and in which function.
type Literal struct {
	Pos  string // file:line
	Func string // the enclosing top-level function or method ("" outside one)
}

// Pair is two files that call each other.
type Pair struct{ A, B string }

func (p Pair) String() string { return p.A + " <-> " + p.B }

// Load parses and type-checks the package in dir, test files left out.
func Load(dir string) (*Graph, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	var files []*ast.File
	declared := map[token.Pos]string{} // a function or method's name position → its file
	g := &Graph{Refs: map[string]map[string][]string{}, Literals: map[string][]Literal{}}
	for _, path := range names {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		f, err := parser.ParseFile(fset, path, src, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		base := filepath.Base(path)
		files = append(files, f)
		g.Files = append(g.Files, base)
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok {
				declared[fd.Name.Pos()] = base
			}
		}
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no Go files in %s", dir)
	}
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}}
	conf := types.Config{Importer: emptyImporter{}, Error: func(error) {}}
	pkg, _ := conf.Check(files[0].Name.Name, fset, files, info) // errors: the imports are empty
	for _, f := range files {
		g.walk(fset, filepath.Base(fset.Position(f.Pos()).Filename), f, pkg, info, declared)
	}
	sort.Strings(g.Files)
	return g, nil
}

// emptyImporter stands every import in by an empty package named after its path.
type emptyImporter struct{}

func (emptyImporter) Import(path string) (*types.Package, error) {
	name := pathpkg.Base(path)
	if len(name) > 1 && name[0] == 'v' && strings.Trim(name[1:], "0123456789") == "" {
		name = pathpkg.Base(pathpkg.Dir(path)) // k8s.io/klog/v2
	}
	p := types.NewPackage(path, strings.ReplaceAll(name, "-", ""))
	p.MarkComplete()
	return p, nil
}

func (g *Graph) walk(fset *token.FileSet, base string, f *ast.File, pkg *types.Package, info *types.Info, declared map[token.Pos]string) {
	seen := map[string]map[string]bool{}
	for _, d := range f.Decls {
		fn := ""
		if fd, ok := d.(*ast.FuncDecl); ok {
			fn = fd.Name.Name
		}
		ast.Inspect(d, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.CompositeLit:
				if typ := litType(x.Type); typ != "" {
					p := fset.Position(x.Pos())
					g.Literals[typ] = append(g.Literals[typ], Literal{Pos: fmt.Sprintf("%s:%d", base, p.Line), Func: fn})
				}
			case *ast.Ident:
				obj, ok := info.Uses[x].(*types.Func)
				if !ok || obj.Pkg() != pkg {
					return true
				}
				other, ok := declared[obj.Pos()]
				if !ok || other == base || seen[other][x.Name] {
					return true
				}
				if seen[other] == nil {
					seen[other] = map[string]bool{}
				}
				seen[other][x.Name] = true
				if g.Refs[base] == nil {
					g.Refs[base] = map[string][]string{}
				}
				g.Refs[base][other] = append(g.Refs[base][other], x.Name)
			}
			return true
		})
	}
	for _, names := range g.Refs[base] {
		sort.Strings(names)
	}
}

// litType is the name of a composite literal's type when it is a bare name (T{}, and so
// &T{}), "" otherwise.
func litType(e ast.Expr) string {
	if id, ok := e.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}

// Mutual returns the pairs of files that call each other, sorted.
func (g *Graph) Mutual() []Pair {
	var out []Pair
	for _, a := range g.Files {
		for b := range g.Refs[a] {
			if a < b && len(g.Refs[b][a]) > 0 {
				out = append(out, Pair{a, b})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].A != out[j].A {
			return out[i].A < out[j].A
		}
		return out[i].B < out[j].B
	})
	return out
}
