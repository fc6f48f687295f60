package deploy

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// This file reads the configuration the code has — every `env:"…"` struct tag with its envDefault, the defaults a
// service's LoadConfig presets before the environment is parsed over them (the composer's policy comes from
// compose.DefaultPolicy), the variables read with os.Getenv or os.LookupEnv, and the zoea CLI's envOr/envInt/
// envDuration flags — from the Go source, and holds docs/CONFIGURATION.md to it.

const modulePath = "github.com/zoeaswarm/zoea"

// longDefault: a default longer than this (a nudge's wording, the demo mission) is described, not quoted.
const longDefault = 60

// envRead is one place the code reads a variable, with the default it has there ("" when none is known).
type envRead struct {
	name, def, where string
	list             bool // a list default is always compared, however long
}

// goPkg is one parsed package directory.
type goPkg struct {
	dir   string
	files []*ast.File
}

// goSource is the repository's Go code, parsed: packages by directory and by import path.
type goSource struct {
	root  string
	fset  *token.FileSet
	pkgs  map[string]*goPkg // by directory
	byImp map[string]*goPkg // by import path
}

func parseGoSource(t *testing.T, root string) *goSource {
	t.Helper()
	src := &goSource{root: root, fset: token.NewFileSet(), pkgs: map[string]*goPkg{}, byImp: map[string]*goPkg{}}
	for _, top := range []string{"libs", "services", "cmd"} {
		err := filepath.WalkDir(filepath.Join(root, top), func(p string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if d.Name() == "testdata" || d.Name() == "node_modules" {
					return filepath.SkipDir
				}
				return nil
			}
			if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
				return nil
			}
			f, err := parser.ParseFile(src.fset, p, nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			dir := filepath.Dir(p)
			pkg := src.pkgs[dir]
			if pkg == nil {
				pkg = &goPkg{dir: dir}
				src.pkgs[dir] = pkg
				rel, _ := filepath.Rel(root, dir)
				src.byImp[modulePath+"/"+filepath.ToSlash(rel)] = pkg
			}
			pkg.files = append(pkg.files, f)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return src
}

// shipped reports whether a package directory is code that runs in a deployed swarm or the zoea CLI: not test
// support, test kits, end-to-end tests or a service's tooling.
func (s *goSource) shipped(dir string) bool {
	rel, _ := filepath.Rel(s.root, dir)
	for _, part := range strings.Split(filepath.ToSlash(rel), "/") {
		switch part {
		case "testsupport", "testkit", "e2e", "tools", "testprogress":
			return false
		}
	}
	return true
}

// where names a position for a message: file:line from the repository root.
func (s *goSource) where(n ast.Node) string {
	p := s.fset.Position(n.Pos())
	rel, _ := filepath.Rel(s.root, p.Filename)
	return fmt.Sprintf("%s:%d", rel, p.Line)
}

// scope is what an expression is evaluated in: its package, its file's imports, the local variables of its function.
type scope struct {
	pkg    *goPkg
	file   *ast.File
	locals map[string]ast.Expr
	bound  map[string]any // a called function's parameters, evaluated in the caller's scope
}

func (s *goSource) importOf(sc scope, name string) *goPkg {
	for _, im := range sc.file.Imports {
		path, _ := strconv.Unquote(im.Path.Value)
		alias := filepath.Base(path)
		if im.Name != nil {
			alias = im.Name.Name
		}
		if alias == name {
			return s.byImp[path]
		}
	}
	return nil
}

// lookup finds a package-level declaration: a const or var's value, a func, or a struct type.
func (s *goSource) lookup(pkg *goPkg, name string) (value ast.Expr, fn *ast.FuncDecl, st *ast.StructType, file *ast.File) {
	for _, f := range pkg.files {
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil && d.Name.Name == name {
					return nil, d, nil, f
				}
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					switch sp := spec.(type) {
					case *ast.ValueSpec:
						for i, n := range sp.Names {
							if n.Name == name && i < len(sp.Values) {
								return sp.Values[i], nil, nil, f
							}
						}
					case *ast.TypeSpec:
						if sp.Name.Name == name {
							if stt, ok := sp.Type.(*ast.StructType); ok {
								return nil, nil, stt, f
							}
						}
					}
				}
			}
		}
	}
	return nil, nil, nil, nil
}

// composite is a struct literal being evaluated: its fields' expressions in their scope.
type composite struct {
	fields map[string]ast.Expr
	sc     scope
}

// zero is a struct field a literal leaves out.
type zero struct{}

// eval evaluates the few expression forms defaults are written in; anything else is an error naming it, so a new
// form shows up as a test to extend rather than a default silently unchecked.
func (s *goSource) eval(sc scope, e ast.Expr) (any, error) {
	switch e := e.(type) {
	case *ast.BasicLit:
		if e.Kind == token.STRING {
			return strconv.Unquote(e.Value)
		}
		return e.Value, nil
	case *ast.ParenExpr:
		return s.eval(sc, e.X)
	case *ast.Ident:
		switch e.Name {
		case "true", "false":
			return e.Name, nil
		}
		if v, ok := sc.bound[e.Name]; ok {
			return v, nil
		}
		if x, ok := sc.locals[e.Name]; ok {
			return s.eval(scope{pkg: sc.pkg, file: sc.file}, x)
		}
		if v, _, _, f := s.lookup(sc.pkg, e.Name); v != nil {
			return s.eval(scope{pkg: sc.pkg, file: f}, v)
		}
	case *ast.UnaryExpr:
		if e.Op == token.NOT {
			v, err := s.eval(sc, e.X)
			if err != nil {
				return nil, err
			}
			switch v {
			case "true":
				return "false", nil
			case "false", zero{}:
				return "true", nil
			}
		}
	case *ast.BinaryExpr:
		if e.Op == token.ADD {
			a, err1 := s.eval(sc, e.X)
			b, err2 := s.eval(sc, e.Y)
			as, ok1 := a.(string)
			bs, ok2 := b.(string)
			if err1 == nil && err2 == nil && ok1 && ok2 {
				return as + bs, nil
			}
		}
		if e.Op == token.MUL {
			a, err1 := s.eval(sc, e.X)
			b, err2 := s.eval(sc, e.Y)
			if err1 == nil && err2 == nil {
				if n, err := strconv.Atoi(fmt.Sprint(a)); err == nil {
					if d, err := time.ParseDuration(fmt.Sprint(b)); err == nil {
						return (time.Duration(n) * d).String(), nil
					}
				}
			}
		}
	case *ast.SelectorExpr:
		if id, ok := e.X.(*ast.Ident); ok {
			_, bound := sc.bound[id.Name]
			if _, local := sc.locals[id.Name]; !local && !bound {
				if id.Name == "time" {
					if d, ok := map[string]time.Duration{"Millisecond": time.Millisecond, "Second": time.Second, "Minute": time.Minute, "Hour": time.Hour}[e.Sel.Name]; ok {
						return d.String(), nil
					}
				}
				if pkg := s.importOf(sc, id.Name); pkg != nil {
					if v, _, _, f := s.lookup(pkg, e.Sel.Name); v != nil {
						return s.eval(scope{pkg: pkg, file: f}, v)
					}
				}
			}
		}
		x, err := s.eval(sc, e.X)
		if err != nil {
			return nil, err
		}
		if x == (zero{}) {
			return zero{}, nil // a field of a field the literal leaves out
		}
		if c, ok := x.(*composite); ok {
			f, ok := c.fields[e.Sel.Name]
			if !ok {
				return zero{}, nil
			}
			return s.eval(c.sc, f)
		}
	case *ast.CallExpr:
		switch fun := e.Fun.(type) {
		case *ast.Ident:
			switch fun.Name {
			case "string", "int", "int32", "int64", "float64", "bool":
				if len(e.Args) == 1 {
					return s.eval(sc, e.Args[0])
				}
			}
			if _, fn, _, f := s.lookup(sc.pkg, fun.Name); fn != nil {
				bound, err := s.bindArgs(sc, fn, e.Args)
				if err != nil {
					return nil, err
				}
				return s.evalFunc(scope{pkg: sc.pkg, file: f, bound: bound}, fn)
			}
		case *ast.SelectorExpr:
			if id, ok := fun.X.(*ast.Ident); ok {
				if pkg := s.importOf(sc, id.Name); pkg != nil {
					if _, fn, _, f := s.lookup(pkg, fun.Sel.Name); fn != nil {
						return s.evalFunc(scope{pkg: pkg, file: f}, fn)
					}
				}
			}
		}
	case *ast.CompositeLit:
		if at, ok := e.Type.(*ast.ArrayType); ok {
			if id, ok := at.Elt.(*ast.Ident); ok && id.Name == "string" {
				var out []string
				for _, el := range e.Elts {
					v, err := s.eval(sc, el)
					if err != nil {
						return nil, err
					}
					out = append(out, fmt.Sprint(v))
				}
				return out, nil
			}
		}
		c := &composite{fields: map[string]ast.Expr{}, sc: sc}
		for _, el := range e.Elts {
			if kv, ok := el.(*ast.KeyValueExpr); ok {
				if k, ok := kv.Key.(*ast.Ident); ok {
					c.fields[k.Name] = kv.Value
				}
			}
		}
		return c, nil
	}
	return nil, fmt.Errorf("cannot evaluate %s at %s: teach config_doc_test.go this form", exprString(e), s.where(e))
}

// bindArgs evaluates a call's arguments in the caller's scope, by the called function's parameter names
// (policyConfig(compose.DefaultPolicy())).
func (s *goSource) bindArgs(sc scope, fn *ast.FuncDecl, args []ast.Expr) (map[string]any, error) {
	var names []string
	for _, f := range fn.Type.Params.List {
		for _, n := range f.Names {
			names = append(names, n.Name)
		}
	}
	if len(names) != len(args) {
		return nil, fmt.Errorf("cannot evaluate %s (%s): %d arguments for %d parameters", fn.Name.Name, s.where(fn), len(args), len(names))
	}
	bound := map[string]any{}
	for i, a := range args {
		v, err := s.eval(sc, a)
		if err != nil {
			return nil, err
		}
		bound[names[i]] = v
	}
	return bound, nil
}

// evalFunc evaluates a function that returns one value and does nothing else (compose.DefaultPolicy).
func (s *goSource) evalFunc(sc scope, fn *ast.FuncDecl) (any, error) {
	if fn.Body == nil || len(fn.Body.List) != 1 {
		return nil, fmt.Errorf("cannot evaluate %s (%s): not a single return statement", fn.Name.Name, s.where(fn))
	}
	ret, ok := fn.Body.List[0].(*ast.ReturnStmt)
	if !ok || len(ret.Results) != 1 {
		return nil, fmt.Errorf("cannot evaluate %s (%s): not a single return statement", fn.Name.Name, s.where(fn))
	}
	return s.eval(sc, ret.Results[0])
}

func exprString(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return exprString(e.X) + "." + e.Sel.Name
	case *ast.CallExpr:
		return exprString(e.Fun) + "(…)"
	}
	return fmt.Sprintf("%T", e)
}

// render writes a default the way the documents quote it: a list joined by its separator.
func render(v any, sep string) (string, bool) {
	switch v := v.(type) {
	case string:
		return v, true
	case []string:
		if sep == "" {
			sep = ","
		}
		return strings.Join(v, sep), true
	}
	return "", false
}

// structOf resolves a field's type to a struct declared in this repository.
func (s *goSource) structOf(sc scope, typ ast.Expr) (*ast.StructType, scope) {
	switch t := typ.(type) {
	case *ast.Ident:
		if _, _, st, f := s.lookup(sc.pkg, t.Name); st != nil {
			return st, scope{pkg: sc.pkg, file: f}
		}
	case *ast.SelectorExpr:
		if id, ok := t.X.(*ast.Ident); ok {
			if pkg := s.importOf(sc, id.Name); pkg != nil {
				if _, _, st, f := s.lookup(pkg, t.Sel.Name); st != nil {
					return st, scope{pkg: pkg, file: f}
				}
			}
		}
	}
	return nil, scope{}
}

// presets evaluates a configuration literal (cfg := Config{…} before config.LoadWith(&cfg)) against its struct
// type: each field with an env tag gets the literal's value as its default, nested struct literals recurse.
func (s *goSource) presets(st *ast.StructType, stScope scope, lit *composite, out *[]envRead, where string) error {
	for _, fld := range st.Fields.List {
		for _, n := range fld.Names {
			x, ok := lit.fields[n.Name]
			if !ok {
				continue
			}
			if name, _, ok := envTag(fld); ok {
				v, err := s.eval(lit.sc, x)
				if err != nil {
					return err
				}
				sep := reflect.StructTag(strings.Trim(fieldTag(fld), "`")).Get("envSeparator")
				if r, ok := render(v, sep); ok {
					_, list := v.([]string)
					*out = append(*out, envRead{name: name, def: r, where: where, list: list})
				}
				continue
			}
			if inner, innerScope := s.structOf(stScope, fld.Type); inner != nil {
				v, err := s.eval(lit.sc, x)
				if err != nil {
					return err
				}
				if c, ok := v.(*composite); ok {
					if err := s.presets(inner, innerScope, c, out, where); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}

func fieldTag(f *ast.Field) string {
	if f.Tag == nil {
		return ""
	}
	return f.Tag.Value
}

// envTag returns a field's env variable and envDefault.
func envTag(f *ast.Field) (name, def string, ok bool) {
	tag := reflect.StructTag(strings.Trim(fieldTag(f), "`"))
	name, ok = tag.Lookup("env")
	if !ok || name == "" {
		return "", "", false
	}
	return name, tag.Get("envDefault"), true
}

// envReads collects every variable the Go code reads and the defaults it has, split into the shipped code's
// (which docs/CONFIGURATION.md must document) and every read anywhere (which a documented variable must be one of).
func envReads(t *testing.T, src *goSource) (shipped, all []envRead) {
	t.Helper()
	var errs []error
	dirs := make([]string, 0, len(src.pkgs))
	for d := range src.pkgs {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	for _, dir := range dirs {
		pkg := src.pkgs[dir]
		var reads []envRead
		// Functions that read the environment variable named by their first parameter: envOr, envInt, envDuration.
		readers := map[string]bool{}
		for _, f := range pkg.files {
			for _, d := range f.Decls {
				fn, ok := d.(*ast.FuncDecl)
				if !ok || fn.Recv != nil || fn.Body == nil || len(fn.Type.Params.List) == 0 || len(fn.Type.Params.List[0].Names) == 0 {
					continue
				}
				param := fn.Type.Params.List[0].Names[0].Name
				ast.Inspect(fn.Body, func(n ast.Node) bool {
					if key, ok := getenvArg(n); ok {
						if id, ok := key.(*ast.Ident); ok && id.Name == param {
							readers[fn.Name.Name] = true
						}
					}
					return true
				})
			}
		}
		for _, f := range pkg.files {
			sc := scope{pkg: pkg, file: f}
			ast.Inspect(f, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.Field:
					if name, def, ok := envTag(n); ok {
						reads = append(reads, envRead{name: name, def: def, where: src.where(n)})
					}
				case *ast.RangeStmt:
					// for _, k := range []string{"OTEL_…", …} { … os.Getenv(k) … }
					if lit, ok := n.X.(*ast.CompositeLit); ok {
						if v, ok := n.Value.(*ast.Ident); ok {
							uses := false
							ast.Inspect(n.Body, func(m ast.Node) bool {
								if key, ok := getenvArg(m); ok {
									if id, ok := key.(*ast.Ident); ok && id.Name == v.Name {
										uses = true
									}
								}
								return true
							})
							if uses {
								for _, el := range lit.Elts {
									if b, ok := el.(*ast.BasicLit); ok && b.Kind == token.STRING {
										name, _ := strconv.Unquote(b.Value)
										reads = append(reads, envRead{name: name, where: src.where(b)})
									}
								}
							}
						}
					}
				case *ast.CallExpr:
					if key, ok := getenvArg(n); ok {
						if b, ok := key.(*ast.BasicLit); ok && b.Kind == token.STRING {
							name, _ := strconv.Unquote(b.Value)
							reads = append(reads, envRead{name: name, where: src.where(n)})
						}
					}
					if id, ok := n.Fun.(*ast.Ident); ok && readers[id.Name] && len(n.Args) >= 1 {
						if b, ok := n.Args[0].(*ast.BasicLit); ok && b.Kind == token.STRING {
							name, _ := strconv.Unquote(b.Value)
							r := envRead{name: name, where: src.where(n)}
							if len(n.Args) >= 2 {
								v, err := src.eval(sc, n.Args[1])
								if err != nil {
									errs = append(errs, err)
								} else if s, ok := render(v, ","); ok {
									r.def = s
								}
							}
							reads = append(reads, r)
						}
					}
					// cfg := T{…}; config.LoadWith(&cfg): the literal's fields are defaults.
					if sel, ok := n.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "LoadWith" && len(n.Args) == 1 {
						if err := src.loadWithPresets(sc, n, &reads); err != nil {
							errs = append(errs, err)
						}
					}
				}
				return true
			})
		}
		all = append(all, reads...)
		if src.shipped(dir) {
			shipped = append(shipped, reads...)
		}
	}
	for _, err := range errs {
		t.Error(err)
	}
	return shipped, all
}

// getenvArg returns the key of an os.Getenv or os.LookupEnv call.
func getenvArg(n ast.Node) (ast.Expr, bool) {
	call, ok := n.(*ast.CallExpr)
	if !ok || len(call.Args) != 1 {
		return nil, false
	}
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return nil, false
	}
	if id, ok := sel.X.(*ast.Ident); !ok || id.Name != "os" || (sel.Sel.Name != "Getenv" && sel.Sel.Name != "LookupEnv") {
		return nil, false
	}
	return call.Args[0], true
}

// loadWithPresets finds the literal that config.LoadWith(&cfg) parses the environment over, in the function that
// calls it, and records its fields' values as defaults.
func (s *goSource) loadWithPresets(sc scope, call *ast.CallExpr, out *[]envRead) error {
	u, ok := call.Args[0].(*ast.UnaryExpr)
	if !ok || u.Op != token.AND {
		return nil
	}
	target, ok := u.X.(*ast.Ident)
	if !ok {
		return nil
	}
	var body *ast.BlockStmt
	for _, d := range sc.file.Decls {
		if fn, ok := d.(*ast.FuncDecl); ok && fn.Body != nil && fn.Pos() <= call.Pos() && call.End() <= fn.End() {
			body = fn.Body
		}
	}
	if body == nil {
		return nil
	}
	locals := map[string]ast.Expr{}
	var lit *ast.CompositeLit
	for _, stmt := range body.List {
		as, ok := stmt.(*ast.AssignStmt)
		if !ok || as.Tok != token.DEFINE || len(as.Lhs) != len(as.Rhs) {
			continue
		}
		for i, l := range as.Lhs {
			id, ok := l.(*ast.Ident)
			if !ok {
				continue
			}
			if id.Name == target.Name {
				lit, _ = as.Rhs[i].(*ast.CompositeLit)
			} else {
				locals[id.Name] = as.Rhs[i]
			}
		}
	}
	if lit == nil {
		return nil // a zero configuration: the tags' defaults only
	}
	st, stScope := s.structOf(sc, lit.Type)
	if st == nil {
		return fmt.Errorf("%s: cannot find the struct type of the configuration literal", s.where(lit))
	}
	v, err := s.eval(scope{pkg: sc.pkg, file: sc.file, locals: locals}, lit)
	if err != nil {
		return err
	}
	return s.presets(st, stScope, v.(*composite), out, s.where(lit))
}

// configRow is one row of a table in docs/CONFIGURATION.md that names variables.
type configRow struct {
	line     int
	names    []string
	defaults []string // the default cell, one per name when the cell lists them "a / b"; else one for all
}

var (
	varToken    = regexp.MustCompile("`([A-Z][A-Z0-9_]*)`")
	backtickTok = regexp.MustCompile("`([^`]*)`")
)

func configRows(t *testing.T, path string) []configRow {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rows []configRow
	for i, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		c := tableCells(line)
		if len(c) < 2 {
			continue
		}
		var names []string
		for _, m := range varToken.FindAllStringSubmatch(c[0], -1) {
			names = append(names, m[1])
		}
		if len(names) == 0 {
			continue
		}
		r := configRow{line: i + 1, names: names, defaults: []string{c[1]}}
		if parts := strings.Split(c[1], " / "); len(names) > 1 && len(parts) == len(names) {
			r.defaults = parts
		}
		rows = append(rows, r)
	}
	return rows
}

// defaultCell is the part of a row's default cell that documents the row's i-th variable.
func (r configRow) defaultCell(i int) string {
	if len(r.defaults) == len(r.names) {
		return r.defaults[i]
	}
	return r.defaults[0]
}

// TestDocConfigurationNamesEveryVariable: docs/CONFIGURATION.md lists every variable the shipped code reads (struct
// tags, os.Getenv/LookupEnv, the CLI's env flags) in one of its tables, each under its full name, with each default
// the code gives it quoted in the row's default column (`8192`, `get_status,…`): the code is the source and the page
// must say the same. A variable the page documents must be one the code (tooling and tests included) reads.
func TestDocConfigurationNamesEveryVariable(t *testing.T) {
	root := repoRoot(t)
	src := parseGoSource(t, root)
	shipped, all := envReads(t, src)
	if len(shipped) < 80 {
		t.Fatalf("found only %d variable reads in the shipped code: the scan no longer sees the configuration", len(shipped))
	}
	doc := filepath.Join(root, "docs", "CONFIGURATION.md")
	rows := configRows(t, doc)
	byName := map[string][]configRow{}
	for _, r := range rows {
		for _, n := range r.names {
			byName[n] = append(byName[n], r)
		}
	}
	type key struct{ name, def string }
	seen := map[key]bool{}
	checkedDefaults := 0
	for _, r := range shipped {
		docRows := byName[r.name]
		if len(docRows) == 0 {
			if !seen[key{r.name, "\x00"}] {
				t.Errorf("%s (read at %s) is not in a table of docs/CONFIGURATION.md", r.name, r.where)
				seen[key{r.name, "\x00"}] = true
			}
			continue
		}
		if r.def == "" || len(r.def) > longDefault && !r.list || seen[key{r.name, r.def}] {
			continue
		}
		seen[key{r.name, r.def}] = true
		checkedDefaults++
		var cells []string
		found := false
		for _, dr := range docRows {
			cell := dr.defaultCell(slices.Index(dr.names, r.name))
			cells = append(cells, fmt.Sprintf("line %d: %q", dr.line, cell))
			for _, m := range backtickTok.FindAllStringSubmatch(cell, -1) {
				if strings.TrimSpace(m[1]) == r.def {
					found = true
				}
			}
		}
		if !found {
			t.Errorf("%s defaults to `%s` (%s); docs/CONFIGURATION.md does not quote it: %s", r.name, r.def, r.where, strings.Join(cells, "; "))
		}
	}
	read := map[string]bool{}
	for _, r := range all {
		read[r.name] = true
	}
	for _, r := range rows {
		for _, n := range r.names {
			if !read[n] {
				t.Errorf("docs/CONFIGURATION.md line %d documents %s, which no Go code reads", r.line, n)
			}
		}
	}
	// The services' READMEs repeat some rows: a variable they name must exist too, and where a row names one
	// variable and quotes one default, it must be one the code gives it. (DEPLOY.md's tables are compose's
	// variables, not the code's.)
	defaults := map[string]map[string]bool{}
	for _, r := range shipped {
		if defaults[r.name] == nil {
			defaults[r.name] = map[string]bool{}
		}
		if r.def != "" {
			defaults[r.name][r.def] = true
		}
	}
	others, _ := filepath.Glob(filepath.Join(root, "services", "*", "README.md"))
	for _, other := range others {
		rel, _ := filepath.Rel(root, other)
		for _, r := range configRows(t, other) {
			for _, n := range r.names {
				if !read[n] {
					t.Errorf("%s line %d documents %s, which no Go code reads", rel, r.line, n)
				}
			}
			quoted := backtickTok.FindAllStringSubmatch(r.defaults[0], -1)
			if len(r.names) != 1 || len(quoted) != 1 || strings.TrimSpace(r.defaults[0]) != quoted[0][0] || len(defaults[r.names[0]]) == 0 {
				continue
			}
			if got := quoted[0][1]; !defaults[r.names[0]][got] {
				var want []string
				for d := range defaults[r.names[0]] {
					want = append(want, "`"+d+"`")
				}
				sort.Strings(want)
				t.Errorf("%s line %d gives %s the default `%s`; the code's: %s", rel, r.line, r.names[0], got, strings.Join(want, ", "))
			}
		}
	}
	if checkedDefaults < 50 {
		t.Fatalf("only %d defaults compared: the scan no longer finds them", checkedDefaults)
	}
	t.Logf("%d variable reads, %d defaults compared", len(shipped), checkedDefaults)
}
