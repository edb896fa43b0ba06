package binaries

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/flotilla-dev/flotilla/pkg/kubeversion"
)

// Names of the control plane programs, as they are named in a version directory.
const (
	KubeAPIServer         = "kube-apiserver"
	KubeControllerManager = "kube-controller-manager"
	KubeScheduler         = "kube-scheduler"
	Etcd                  = "etcd"
	Kwok                  = "kwok"
)

// Names lists every program a control plane needs, in the order a control plane starts them.
var Names = []string{Etcd, KubeAPIServer, KubeControllerManager, KubeScheduler, Kwok}

// Names of the programs of a real node, and of the programs Flotilla's images are made of, as
// they are named in a version directory. CNI plugins are in its cni/ subdirectory, the
// directory containerd runs them from (CNIDir).
const (
	Kubelet              = "kubelet"
	KubeProxy            = "kube-proxy"
	Containerd           = "containerd"
	ContainerdShimRuncV2 = "containerd-shim-runc-v2"
	CNIBridge            = "cni/bridge"
	CNIHostLocal         = "cni/host-local"
	CNILoopback          = "cni/loopback"

	CoreDNS       = "coredns"
	Pause         = "pause"
	HelloFlotilla = "hello-flotilla"
)

// CNIDir is the subdirectory of a version directory that holds the CNI plugins.
const CNIDir = "cni"

// NodeNames lists the programs a real node runs on the host (besides Debian's runc and
// iptables): kubelet and kube-proxy of the node's version, containerd with its runc shim, and
// the CNI plugins.
var NodeNames = []string{Kubelet, KubeProxy, Containerd, ContainerdShimRuncV2, CNIBridge, CNIHostLocal, CNILoopback}

// ImageNames lists the programs of the images real nodes pull (package images): the Pod
// sandbox's pause, CoreDNS and the hello-flotilla chart's web server. They are static.
var ImageNames = []string{Pause, CoreDNS, HelloFlotilla}

// Supported lists the Kubernetes versions whose binaries Flotilla builds, newest first.
var Supported = []string{"v1.36.3", "v1.35.4"}

// RootEnv names the environment variable that overrides DefaultRoot.
const RootEnv = "FLOTILLA_BIN_CACHE"

// ErrMissing is wrapped by Find's error when a program is absent or not executable.
var ErrMissing = errors.New("control plane binary missing")

// ResolveMinor turns a minor version ("1.36", "v1.36") or a supported full version ("v1.36.3")
// into the full version Flotilla builds for it. The error lists the supported minors.
func ResolveMinor(version string) (string, error) {
	if want, err := kubeversion.Parse(version); err == nil {
		for _, v := range Supported {
			supported, _ := kubeversion.Parse(v) // TestSupportedVersionsParse
			if supported == want || (!want.HasPatch && supported.SameMinor(want)) {
				return v, nil
			}
		}
	}
	return "", fmt.Errorf("kubernetes version %q is not supported: supported minor versions are %s",
		version, strings.Join(SupportedMinors(), ", "))
}

// SupportedMinors lists the minor versions of Supported, newest first: "1.36", "1.35".
func SupportedMinors() []string {
	minors := make([]string, 0, len(Supported))
	for _, v := range Supported {
		minor, _ := kubeversion.Minor(v) // TestSupportedVersionsParse
		minors = append(minors, minor)
	}
	return minors
}

// DefaultRoot returns $FLOTILLA_BIN_CACHE, or ~/.cache/flotilla/bin when it is unset.
func DefaultRoot() string {
	if root := os.Getenv(RootEnv); root != "" {
		return root
	}
	// Not os.UserCacheDir: the Makefile builds into $(HOME)/.cache whatever XDG_CACHE_HOME says.
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "flotilla", "bin")
}

// Set is the directory holding one version's control plane programs.
type Set struct {
	// Dir is <root>/<version>.
	Dir string
	// Version is the full Kubernetes version, e.g. "v1.36.3".
	Version string
}

// Path returns the absolute path of the named program ("kube-apiserver", "etcd", ...).
func (s Set) Path(name string) string {
	return filepath.Join(s.Dir, name)
}

// BuildCommand returns the command that builds this set's programs: `flotilla binaries build
// <version>`, with --bin-dir when the set is not in DefaultRoot.
func (s Set) BuildCommand() string {
	cmd := "flotilla binaries build " + s.Version
	if root := filepath.Dir(s.Dir); !sameDir(root, DefaultRoot()) {
		cmd += " --bin-dir " + root
	}
	return cmd
}

// sameDir reports whether a and b name the same directory, as absolute paths.
func sameDir(a, b string) bool {
	absA, errA := filepath.Abs(a)
	absB, errB := filepath.Abs(b)
	return errA == nil && errB == nil && absA == absB
}

// Check reports, with the build instruction, the first of names that is missing or not
// executable in s.Dir.
func (s Set) Check(names ...string) error {
	for _, name := range names {
		path := s.Path(name)
		info, err := os.Stat(path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return fmt.Errorf("%w: %s not found in %s; run: %s", ErrMissing, name, s.Dir, s.BuildCommand())
		case err != nil:
			return fmt.Errorf("%w: checking %s: %v; run: %s", ErrMissing, path, err, s.BuildCommand())
		case info.IsDir() || info.Mode().Perm()&0o111 == 0:
			return fmt.Errorf("%w: %s is not an executable file; run: %s", ErrMissing, path, s.BuildCommand())
		}
	}
	return nil
}

// Missing returns those of names that are missing or not executable in s.Dir.
func (s Set) Missing(names ...string) []string {
	var missing []string
	for _, name := range names {
		if s.Check(name) != nil {
			missing = append(missing, name)
		}
	}
	return missing
}

// Find returns the Set of version under root once all of its programs are present and
// executable. Otherwise the error names the missing program, the directory and the fix.
func Find(root, version string) (Set, error) {
	if root == "" {
		root = DefaultRoot()
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return Set{}, fmt.Errorf("resolving binary cache %q: %w", root, err)
	}
	set := Set{Dir: filepath.Join(abs, version), Version: version}
	if err := set.Check(Names...); err != nil {
		return Set{}, err
	}
	return set, nil
}
