package binaries

import (
	"bufio"
	"context"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/flotilla-dev/flotilla/pkg/kubeversion"
)

// modules holds the Go modules the programs are built from, one directory each, with their
// go.mod, go.sum (and any source) stored as <name>.txt: a directory holding a go.mod would be
// another module, which go:embed cannot reach.
//
//go:embed modules
var modules embed.FS

// target is one `go build` that makes some of a version's programs.
type target struct {
	// what names the build in progress lines: "kubernetes v1.36.3", "etcd", "kwok".
	what string
	// module is the module's directory in the modules file system.
	module string
	// packages are the main packages to build, each making the program named after its last
	// path element.
	packages []string
	// programs are what the build makes, as named in the version directory (a subdirectory
	// first, as in "cni/bridge"); it is skipped when all are present.
	programs []string
	// ldflags are added to "-s -w".
	ldflags string
	// tags are the build tags, space-separated.
	tags string
	// static builds without cgo: programs that run in images, which hold no C library.
	static bool
}

// Versions of what the node targets build, as their modules require them.
const (
	containerdVersion = "v2.4.2"
	cniPluginsVersion = "v1.9.1"
)

// targets are the builds that make the control plane programs of version, a Supported version,
// and with nodes also the programs of real nodes and of Flotilla's images.
func targets(version string, nodes bool) ([]target, error) {
	v, err := kubeversion.Parse(version)
	if err != nil {
		return nil, err
	}
	// What `kube-apiserver --version` and the /version endpoint report, as release builds do.
	var ldflags []string
	for _, pkg := range []string{"k8s.io/component-base/version", "k8s.io/client-go/pkg/version"} {
		ldflags = append(ldflags, "-X "+pkg+".gitVersion="+version, "-X "+pkg+".gitMajor="+strconv.Itoa(v.Major),
			"-X "+pkg+".gitMinor="+strconv.Itoa(v.Minor))
	}
	kube := "kube-v" + v.MinorString()
	ts := []target{
		{
			what:     "kubernetes " + version,
			module:   kube,
			packages: []string{"k8s.io/kubernetes/cmd/kube-apiserver", "k8s.io/kubernetes/cmd/kube-controller-manager", "k8s.io/kubernetes/cmd/kube-scheduler"},
			programs: []string{KubeAPIServer, KubeControllerManager, KubeScheduler},
			ldflags:  strings.Join(ldflags, " "),
		},
		{what: Etcd, module: "etcd", packages: []string{"."}, programs: []string{Etcd}},
		{what: Kwok, module: "kwok", packages: []string{"sigs.k8s.io/kwok/cmd/kwok"}, programs: []string{Kwok}},
	}
	if !nodes {
		return ts, nil
	}
	const containerd = "github.com/containerd/containerd/v2/cmd/"
	const cni = "github.com/containernetworking/plugins/plugins/"
	return append(ts,
		target{
			what:     "kubernetes node " + version,
			module:   kube,
			packages: []string{"k8s.io/kubernetes/cmd/kubelet", "k8s.io/kubernetes/cmd/kube-proxy"},
			programs: []string{Kubelet, KubeProxy},
			ldflags:  strings.Join(ldflags, " "),
		},
		target{
			what:     "containerd " + containerdVersion,
			module:   "containerd",
			packages: []string{containerd + "containerd", containerd + "containerd-shim-runc-v2"},
			programs: []string{Containerd, ContainerdShimRuncV2},
			ldflags:  "-X github.com/containerd/containerd/v2/version.Version=" + containerdVersion,
			// The snapshotters that need C libraries or kernel modules a node here lacks, and
			// tracing, are left out; nodes use overlayfs.
			tags:   "no_btrfs no_devmapper no_zfs no_tracing urfave_cli_no_docs",
			static: true,
		},
		target{
			what:     "cni plugins " + cniPluginsVersion,
			module:   "cni-plugins",
			packages: []string{cni + "main/bridge", cni + "ipam/host-local", cni + "main/loopback"},
			programs: []string{CNIBridge, CNIHostLocal, CNILoopback},
			ldflags:  "-X github.com/containernetworking/plugins/pkg/utils/buildversion.BuildVersion=" + cniPluginsVersion,
			static:   true,
		},
		target{what: CoreDNS, module: "coredns", packages: []string{"."}, programs: []string{CoreDNS}, static: true},
		target{what: Pause, module: "pause", packages: []string{"."}, programs: []string{Pause}, static: true},
		target{what: HelloFlotilla, module: "hello-flotilla", packages: []string{"."}, programs: []string{HelloFlotilla}, static: true},
	), nil
}

// Builder builds the control plane programs of a Kubernetes version from source, through the Go
// module proxy, into <Root>/<version>/.
type Builder struct {
	// Root is the binary cache; DefaultRoot() when empty.
	Root string
	// Out receives progress: what is built or found cached, a line every ProgressEvery
	// compiled packages, and how long each build took.
	Out io.Writer
	// Go is the go command; "go" from $PATH when empty.
	Go string
	// Nodes builds the programs of real nodes (NodeNames) and of Flotilla's images
	// (ImageNames) too.
	Nodes bool

	// modules and targets replace the embedded modules and their builds, in tests.
	modules fs.FS
	targets func(version string, nodes bool) ([]target, error)
}

// ProgressEvery is how many compiled packages a progress line stands for.
const ProgressEvery = 200

// Build builds the programs of version (a minor such as "1.35", or a Supported version) that
// are not in the cache yet; programs already there are kept. Each program appears in the cache
// only once it is built completely.
func (b *Builder) Build(ctx context.Context, version string) (Set, error) {
	full, err := ResolveMinor(version)
	if err != nil {
		return Set{}, err
	}
	root := b.Root
	if root == "" {
		root = DefaultRoot()
	}
	if root, err = filepath.Abs(root); err != nil {
		return Set{}, fmt.Errorf("resolving binary cache %q: %w", b.Root, err)
	}
	set := Set{Dir: filepath.Join(root, full), Version: full}
	plan := b.targets
	if plan == nil {
		plan = targets
	}
	ts, err := plan(full, b.Nodes)
	if err != nil {
		return Set{}, err
	}
	goCmd, err := b.goCommand()
	if err != nil {
		return Set{}, err
	}
	if err := os.MkdirAll(set.Dir, 0o750); err != nil {
		return Set{}, fmt.Errorf("creating %s: %w", set.Dir, err)
	}
	for _, t := range ts {
		if set.Check(t.programs...) == nil {
			fmt.Fprintf(b.Out, "%s: cached in %s\n", t.what, set.Dir)
			continue
		}
		if err := b.build(ctx, goCmd, set.Dir, t); err != nil {
			return Set{}, err
		}
	}
	return set, nil
}

// goCommand finds the go command.
func (b *Builder) goCommand() (string, error) {
	name := b.Go
	if name == "" {
		name = "go"
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("building the control plane binaries needs Go (1.26 or newer, from https://go.dev/dl/): %w", err)
	}
	return p, nil
}

// build writes t's module to a temporary directory and runs go build there, into a temporary
// directory beside the cache's programs, whose results it then moves into dir.
func (b *Builder) build(ctx context.Context, goCmd, dir string, t target) error {
	start := time.Now()
	note := "once per machine"
	if strings.HasPrefix(t.module, "kube-v") {
		note += "; Kubernetes takes about 10 minutes on 2 cores"
	}
	fmt.Fprintf(b.Out, "%s: building %s (%s)\n", t.what, strings.Join(t.programs, ", "), note)
	moduleDir, err := os.MkdirTemp("", "flotilla-build-")
	if err != nil {
		return fmt.Errorf("building %s: %w", t.what, err)
	}
	defer func() { _ = os.RemoveAll(moduleDir) }()
	if err := b.writeModule(t.module, moduleDir); err != nil {
		return fmt.Errorf("building %s: %w", t.what, err)
	}
	out, err := os.MkdirTemp(dir, ".build-")
	if err != nil {
		return fmt.Errorf("building %s: %w", t.what, err)
	}
	defer func() { _ = os.RemoveAll(out) }()

	args := []string{"build", "-v", "-trimpath", "-ldflags", strings.TrimSpace("-s -w " + t.ldflags)}
	if t.tags != "" {
		args = append(args, "-tags", t.tags)
	}
	args = append(args, "-o", out+string(filepath.Separator))
	cmd := exec.CommandContext(ctx, goCmd, append(args, t.packages...)...)
	cmd.Dir = moduleDir
	// The module stands alone: a go.work of the directory the command runs from must not
	// pull it in.
	cmd.Env = append(os.Environ(), "GOWORK=off")
	if t.static {
		cmd.Env = append(cmd.Env, "CGO_ENABLED=0")
	}
	output, err := cmd.StderrPipe()
	if err != nil {
		return fmt.Errorf("building %s: %w", t.what, err)
	}
	cmd.Stdout = cmd.Stderr
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("building %s: running %s: %w", t.what, goCmd, err)
	}
	packages, tail := b.follow(output, t.what, start)
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("building %s with %s in %s failed (%w); its last output:\n%s",
			t.what, goCmd, moduleDir, err, strings.Join(tail, "\n"))
	}
	for _, program := range t.programs {
		dst := filepath.Join(dir, program)
		if err := os.MkdirAll(filepath.Dir(dst), 0o750); err != nil {
			return fmt.Errorf("building %s: %w", t.what, err)
		}
		// go build names a program after its package, without the subdirectory.
		if err := os.Rename(filepath.Join(out, path.Base(program)), dst); err != nil {
			return fmt.Errorf("building %s: %w", t.what, err)
		}
	}
	fmt.Fprintf(b.Out, "%s: %d packages compiled, built in %s\n", t.what, packages, time.Since(start).Round(time.Second))
	return nil
}

// follow reads the output of go build -v (a package path a line; "go: downloading ..." and
// errors otherwise) to its end, prints a progress line every ProgressEvery packages, and returns
// the number of packages and the last lines.
func (b *Builder) follow(r io.Reader, what string, start time.Time) (int, []string) {
	const keep = 30
	var tail []string
	n := 0
	scanner := bufio.NewScanner(r)
	scanner.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for scanner.Scan() {
		line := scanner.Text()
		if tail = append(tail, line); len(tail) > keep {
			tail = tail[1:]
		}
		if strings.HasPrefix(line, "go: ") || strings.ContainsAny(line, " \t") {
			continue // not a package path
		}
		if n++; n%ProgressEvery == 0 {
			fmt.Fprintf(b.Out, "  %s: %d packages compiled (%s)\n", what, n, time.Since(start).Round(time.Second))
		}
	}
	_, _ = io.Copy(io.Discard, r) // a line too long for the scanner: go build must not block on a full pipe
	return n, tail
}

// writeModule writes the files of module (name.txt as name) into dir.
func (b *Builder) writeModule(module, dir string) error {
	fsys := b.modules
	if fsys == nil {
		fsys = modules
	}
	root := path.Join("modules", module)
	entries, err := fs.ReadDir(fsys, root)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("this flotilla holds no module %s to build from", module)
		}
		return err
	}
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".txt")
		if e.IsDir() || !ok {
			continue
		}
		data, err := fs.ReadFile(fsys, path.Join(root, e.Name()))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return err
		}
	}
	return nil
}
