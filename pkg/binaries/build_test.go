package binaries

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	. "github.com/onsi/gomega"
)

// tinyModule is a module of one main package, hello, that builds in a second.
func tinyModule(main string) fstest.MapFS {
	return fstest.MapFS{
		"modules/hello/go.mod.txt":  {Data: []byte("module example.com/hello\n\ngo 1.22\n")},
		"modules/hello/main.go.txt": {Data: []byte(main)},
		"modules/hello/README":      {Data: []byte("not a module file: not written out")},
	}
}

// tinyBuilder builds hello for every version into root, with the real go command.
func tinyBuilder(root string, out *bytes.Buffer, main string) *Builder {
	return &Builder{
		Root:    root,
		Out:     out,
		modules: tinyModule(main),
		targets: func(string, bool) ([]target, error) {
			return []target{{what: "hello", module: "hello", packages: []string{"."}, programs: []string{"hello"}}}, nil
		},
	}
}

// leftovers lists what root holds besides version directories and their programs.
func leftovers(g Gomega, root string) []string {
	var found []string
	g.Expect(filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), ".build-") {
			found = append(found, p)
		}
		return err
	})).To(Succeed())
	return found
}

func TestBuildBuildsWhatIsMissingOnceAndKeepsWhatIsThere(t *testing.T) {
	g := NewWithT(t)
	root := t.TempDir()
	var out bytes.Buffer
	b := tinyBuilder(root, &out, "package main\n\nfunc main() {}\n")

	set, err := b.Build(context.Background(), "1.35")
	g.Expect(err).NotTo(HaveOccurred(), out.String())
	g.Expect(set).To(Equal(Set{Dir: filepath.Join(root, "v1.35.4"), Version: "v1.35.4"}))
	g.Expect(set.Check("hello")).To(Succeed(), "the program is in the version's directory, executable")
	g.Expect(out.String()).To(ContainSubstring("hello: building hello"))
	g.Expect(out.String()).To(MatchRegexp(`hello: \d+ packages compiled, built in \d+s`))
	g.Expect(leftovers(g, root)).To(BeEmpty())
	info, err := os.Stat(set.Path("hello"))
	g.Expect(err).NotTo(HaveOccurred())

	out.Reset()
	_, err = b.Build(context.Background(), "v1.35.4")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out.String()).To(Equal("hello: cached in " + set.Dir + "\n"))
	again, err := os.Stat(set.Path("hello"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again.ModTime()).To(Equal(info.ModTime()), "a cached program is not rebuilt")
}

func TestBuildFailures(t *testing.T) {
	tests := []struct {
		name    string
		version string
		goCmd   string
		main    string
		wantErr []string
	}{
		{
			name:    "a version Flotilla does not build is refused with the supported ones",
			version: "1.30", main: "package main\nfunc main() {}\n",
			wantErr: []string{`"1.30" is not supported: supported minor versions are 1.36, 1.35`},
		},
		{
			name:    "without Go the error says where to get it",
			version: "1.36", goCmd: "/nonexistent/go", main: "package main\nfunc main() {}\n",
			wantErr: []string{"needs Go (1.26 or newer, from https://go.dev/dl/)"},
		},
		{
			name:    "a failed build shows the compiler's output and installs nothing",
			version: "1.36", main: "package main\nfunc main() { undefinedThing() }\n",
			wantErr: []string{"building hello with", "failed", "undefined: undefinedThing"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			root := t.TempDir()
			var out bytes.Buffer
			b := tinyBuilder(root, &out, tt.main)
			b.Go = tt.goCmd
			_, err := b.Build(context.Background(), tt.version)
			for _, want := range tt.wantErr {
				g.Expect(err).To(MatchError(ContainSubstring(want)))
			}
			g.Expect(filepath.Join(root, "v1.36.3", "hello")).NotTo(BeAnExistingFile())
			g.Expect(leftovers(g, root)).To(BeEmpty())
		})
	}
}

func TestFollowCountsPackagesAndKeepsTheLastLines(t *testing.T) {
	g := NewWithT(t)
	var in strings.Builder
	in.WriteString("go: downloading k8s.io/api v0.36.3\n")
	for i := range 2*ProgressEvery + 10 {
		in.WriteString("k8s.io/pkg" + strings.Repeat("x", i%3) + "\n")
	}
	in.WriteString("# k8s.io/broken\nbroken.go:1:1: syntax error\n")
	var out bytes.Buffer
	n, tail := (&Builder{Out: &out}).follow(strings.NewReader(in.String()), "kubernetes v1.36.3", time.Now())
	g.Expect(n).To(Equal(2*ProgressEvery + 10))
	g.Expect(strings.Split(strings.TrimRight(out.String(), "\n"), "\n")).To(HaveExactElements(
		MatchRegexp(`^  kubernetes v1.36.3: 200 packages compiled \(\d+s\)$`),
		MatchRegexp(`^  kubernetes v1.36.3: 400 packages compiled \(\d+s\)$`),
	))
	g.Expect(tail).To(HaveLen(30))
	g.Expect(tail[len(tail)-1]).To(Equal("broken.go:1:1: syntax error"))
}

// TestEveryVersionHasItsModules checks the embedded modules against Supported: the builds of
// each version name modules that exist, and each Kubernetes module requires that version.
func TestEveryVersionHasItsModules(t *testing.T) {
	for _, version := range Supported {
		t.Run(version, func(t *testing.T) {
			g := NewWithT(t)
			controlPlane, err := targets(version, false)
			g.Expect(err).NotTo(HaveOccurred())
			all, err := targets(version, true)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(all[:len(controlPlane)]).To(Equal(controlPlane), "the node builds come after the control plane's")
			var programs []string
			for _, tg := range all {
				programs = append(programs, tg.programs...)
				for _, file := range []string{"go.mod.txt", "go.sum.txt"} {
					_, err := fs.Stat(modules, path.Join("modules", tg.module, file))
					g.Expect(err).NotTo(HaveOccurred(), "module %s has %s", tg.module, file)
				}
			}
			g.Expect(programs[:len(Names)]).To(ConsistOf(Names), "the control plane builds make every program a control plane needs")
			g.Expect(programs[len(Names):]).To(ConsistOf(append(append([]string(nil), NodeNames...), ImageNames...)),
				"the node builds make every program of a real node and of the images")
			for _, tg := range all {
				for _, program := range tg.programs {
					if slices.Contains(ImageNames, program) {
						g.Expect(tg.static).To(BeTrue(), "%s runs in an image without a C library", program)
					}
				}
			}
			kube, err := fs.ReadFile(modules, path.Join("modules", all[0].module, "go.mod.txt"))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(string(kube)).To(ContainSubstring("\nrequire k8s.io/kubernetes " + version + "\n"))
			g.Expect(all[0].ldflags).To(ContainSubstring("-X k8s.io/component-base/version.gitVersion=" + version))
		})
	}
	for _, module := range []string{"etcd", "coredns", "pause", "hello-flotilla"} {
		_, err := fs.Stat(modules, "modules/"+module+"/main.go.txt")
		NewWithT(t).Expect(err).NotTo(HaveOccurred(), "module %s has its main package", module)
	}
	for module, version := range map[string]string{"containerd": "github.com/containerd/containerd/v2 " + containerdVersion, "cni-plugins": "github.com/containernetworking/plugins " + cniPluginsVersion} {
		mod, err := fs.ReadFile(modules, "modules/"+module+"/go.mod.txt")
		NewWithT(t).Expect(err).NotTo(HaveOccurred())
		NewWithT(t).Expect(string(mod)).To(ContainSubstring("\nrequire "+version+"\n"), "the version the build reports is the one built")
	}
}

func TestBuildPutsAProgramInItsSubdirectory(t *testing.T) {
	g := NewWithT(t)
	root := t.TempDir()
	var out bytes.Buffer
	b := tinyBuilder(root, &out, "package main\n\nfunc main() {}\n")
	b.targets = func(string, bool) ([]target, error) {
		return []target{{what: "hello", module: "hello", packages: []string{"."}, programs: []string{"cni/hello"}, static: true}}, nil
	}
	set, err := b.Build(context.Background(), "1.36")
	g.Expect(err).NotTo(HaveOccurred(), out.String())
	g.Expect(set.Check("cni/hello")).To(Succeed())
	g.Expect(leftovers(g, root)).To(BeEmpty())
}
