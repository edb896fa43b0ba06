package layering_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-dev/flotilla/internal/layering"
)

// root is the module's root, from this package's folder.
const root = "../.."

// TestImportsFlowDown reads the import lines of every non-test .go file of the module and fails
// on each that climbs: a file may import its own folder and the folders of lower layers.
func TestImportsFlowDown(t *testing.T) {
	g := NewWithT(t)
	var climbing, unplaced []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || isOtherModule(p)) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		folder, ok := layering.FolderOf(filepath.ToSlash(filepath.Dir(rel)))
		if !ok {
			unplaced = append(unplaced, rel)
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			path, err := strconv.Unquote(imp.Path.Value)
			if err != nil {
				return err
			}
			if to, climbs := layering.Climbs(folder, path); climbs {
				climbing = append(climbing, rel+" imports "+path+" ("+folder+" may not import "+to+")")
			}
		}
		return nil
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(unplaced).To(BeEmpty(), "files in folders layering.Layers does not list: add the folder to its layer")
	g.Expect(climbing).To(BeEmpty(), "imports that climb: move what is shared to a lower folder (see layering.Layers)")
}

// isOtherModule reports whether dir holds a module of its own (the tools modules of hack/tools).
func isOtherModule(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "go.mod"))
	return err == nil
}

// depguardRule is the part of a depguard rule of .golangci.yml this test reads.
type depguardRule struct {
	Files    []string `json:"files"`
	ListMode string   `json:"list-mode"`
	Deny     []struct {
		Pkg string `json:"pkg"`
	} `json:"deny"`
}

// TestTheLintDeniesWhatTheLayersDeny holds .golangci.yml to Layers: for every folder below the
// top layer, a depguard rule named layer-<folder> over its non-test files denies exactly the
// folders Denied lists, so `make lint` fails on the imports this package's test fails on.
func TestTheLintDeniesWhatTheLayersDeny(t *testing.T) {
	g := NewWithT(t)
	raw, err := os.ReadFile(filepath.Join(root, ".golangci.yml"))
	g.Expect(err).NotTo(HaveOccurred())
	var config struct {
		Linters struct {
			Settings struct {
				Depguard struct {
					Rules map[string]depguardRule `json:"rules"`
				} `json:"depguard"`
			} `json:"settings"`
		} `json:"linters"`
	}
	g.Expect(yaml.Unmarshal(raw, &config)).To(Succeed())
	rules := config.Linters.Settings.Depguard.Rules

	for _, layer := range layering.Layers[1:] {
		for _, folder := range layer {
			name := "layer-" + strings.ReplaceAll(folder, "/", "-")
			rule, ok := rules[name]
			g.Expect(ok).To(BeTrue(), "no depguard rule %s in .golangci.yml", name)
			g.Expect(rule.Files).To(ConsistOf("**/"+folder+"/**/*.go", "!$test"), "rule %s", name)
			g.Expect(rule.ListMode).To(Equal("lax"), "rule %s", name)
			var denied []string
			for _, d := range rule.Deny {
				denied = append(denied, strings.TrimPrefix(d.Pkg, layering.Module+"/"))
			}
			want := layering.Denied(folder)
			slices.Sort(denied)
			slices.Sort(want)
			g.Expect(denied).To(Equal(want), "rule %s denies other folders than layering.Denied(%q)", name, folder)
		}
	}
}

// TestAClimbingImportIsFound checks the rule itself on imports that must and must not climb.
func TestAClimbingImportIsFound(t *testing.T) {
	for _, tc := range []struct {
		name, folder, imp string
		climbs            bool
	}{
		{"a controller importing the CLI climbs", "cluster", layering.Module + "/cli/client", true},
		{"a provider importing the manager climbs", "infrastructure", layering.Module + "/manager/capi", true},
		{"pkg importing a domain folder climbs", "pkg", layering.Module + "/packages/bundle", true},
		{"a domain importing its peer climbs", "addons", layering.Module + "/cluster/validation", true},
		{"the API importing pkg climbs", "api", layering.Module + "/pkg/scheme", true},
		{"a controller importing pkg goes down", "cluster", layering.Module + "/pkg/objectpatch", false},
		{"the CLI importing a domain goes down", "cli", layering.Module + "/cluster/spec", false},
		{"the top imports test support", "cmd", layering.Module + "/internal/testenv", false},
		{"a folder imports itself", "packages", layering.Module + "/packages/bundle", false},
		{"imports outside the module do not count", "api", "sigs.k8s.io/cluster-api/api/core/v1beta2", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, climbs := layering.Climbs(tc.folder, tc.imp)
			NewWithT(t).Expect(climbs).To(Equal(tc.climbs))
		})
	}
}
