package client

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilversion "k8s.io/apimachinery/pkg/util/version"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/pkg/version"
)

// Access says what a command does to a management cluster, which decides how a version
// mismatch is handled.
type Access int

const (
	// ReadOnly commands (get clusters, get kubeconfig, describe cluster) warn about an
	// incompatible management cluster and go on: at worst they miss a field.
	ReadOnly Access = iota
	// Mutating commands (create, upgrade and delete of workload clusters) refuse to act on an
	// incompatible management cluster.
	Mutating
)

// CheckVersions is the compatibility rule between the version of the flotilla CLI and the
// version a management cluster records for its manager. Every command that works through a
// management cluster (--kubeconfig) applies it before it does anything else:
//
//   - Two release versions (vMAJOR.MINOR.PATCH, optionally with a pre-release such as -rc.1) are
//     compatible when MAJOR and MINOR are equal. Patch releases change no API, no stored object
//     and nothing the other side relies on; a minor release may change any of them (Flotilla's
//     APIs are v1alpha1), and the CLI writes objects the management cluster's webhooks and
//     controllers must understand. CLI v0.3.2 works with a v0.3.0 cluster, not with v0.4.0.
//   - Development builds are compatible with development builds only. They are v0.0.0-dev (a
//     binary without a version stamp, such as `go build` or `go test` in a checkout), Go
//     pseudo-versions such as v0.3.1-0.20260102150405-abcdef123456 (`go build` with VCS
//     stamping), and "unknown" (a manager started without a version). Neither side promises
//     anything, and developers build both from the same tree; a difference between two
//     development builds is only warned about.
//   - Anything else is incompatible: a release with a development build, a management cluster
//     that records no version (no Flotilla manager ever started on it: it is not a management
//     cluster), a version that does not parse. Equal strings are always compatible.
//
// For Mutating access an incompatible pair is an *IncompatibleVersionError; for ReadOnly it is a
// warning. The warning, when not empty, is for the user to read; it has no trailing newline.
func CheckVersions(cliVersion, clusterVersion string, access Access) (warning string, err error) {
	if cliVersion == clusterVersion {
		return "", nil
	}
	cli, cluster := classify(cliVersion), classify(clusterVersion)
	var reason string
	switch {
	case clusterVersion == "":
		reason = "the cluster records no Flotilla version, so no Flotilla manager has started on it"
	case cli.kind == releaseBuild && cluster.kind == releaseBuild:
		if cli.v.Major() == cluster.v.Major() && cli.v.Minor() == cluster.v.Minor() {
			return "", nil
		}
		reason = "releases work together only within one minor version"
	case cli.kind == devBuild && cluster.kind == devBuild:
		return fmt.Sprintf("flotilla %s and the management cluster's Flotilla %s are different development builds; their compatibility is not checked",
			cliVersion, clusterVersion), nil
	case cli.kind == devBuild || cluster.kind == devBuild:
		reason = "a development build works only with development builds"
	default:
		reason = "a version that is not semantic (vMAJOR.MINOR.PATCH) is compatible only with itself"
	}
	incompatible := &IncompatibleVersionError{CLIVersion: cliVersion, ClusterVersion: clusterVersion, Reason: reason}
	if access == ReadOnly {
		return incompatible.Error() + "; reading anyway", nil
	}
	return "", incompatible
}

// IncompatibleVersionError is CheckVersions' refusal.
type IncompatibleVersionError struct {
	// CLIVersion is the version of this flotilla binary.
	CLIVersion string
	// ClusterVersion is the version the management cluster records, "" for none.
	ClusterVersion string
	// Reason says which part of the rule the pair breaks.
	Reason string
	// Kubeconfig is the management cluster's kubeconfig, when known.
	Kubeconfig string
}

func (e *IncompatibleVersionError) Error() string {
	where := "the management cluster"
	if e.Kubeconfig != "" {
		where = "the management cluster of " + e.Kubeconfig
	}
	if e.ClusterVersion == "" {
		kubeconfig := e.Kubeconfig
		if kubeconfig == "" {
			kubeconfig = "the kubeconfig"
		}
		return fmt.Sprintf("%s does not point to a Flotilla management cluster: %s (ConfigMap %s/%s is missing); pass the kubeconfig of a management cluster, such as mgmt/mgmt.kubeconfig",
			kubeconfig, e.Reason, version.PublicNamespace, version.ConfigMapName)
	}
	msg := fmt.Sprintf("flotilla %s is not compatible with %s, which runs Flotilla %s (%s)", e.CLIVersion, where, e.ClusterVersion, e.Reason)
	cli, cluster := classify(e.CLIVersion), classify(e.ClusterVersion)
	switch {
	case cluster.kind == releaseBuild && cli.kind == releaseBuild && cli.v.LessThan(cluster.v):
		msg += fmt.Sprintf(": use flotilla v%d.%d.x, the management cluster's minor version", cluster.v.Major(), cluster.v.Minor())
	case cluster.kind == releaseBuild:
		msg += fmt.Sprintf(": use flotilla v%d.%d.x, the management cluster's minor version, or have its admin upgrade it first (`flotilla upgrade cluster -f MGMT.yaml` with this flotilla)",
			cluster.v.Major(), cluster.v.Minor())
	default:
		msg += ": use a flotilla built from the same source as the management cluster"
	}
	return msg
}

// buildKind sorts versions for CheckVersions.
type buildKind int

const (
	unparsable buildKind = iota
	releaseBuild
	devBuild
)

type classified struct {
	kind buildKind
	v    *utilversion.Version
}

// pseudoVersionSuffix matches the end of a Go pseudo-version's pre-release: a 14-digit UTC
// timestamp and a 12-character commit hash (v0.0.0-20260102150405-abcdef123456,
// v0.3.1-0.20260102150405-abcdef123456, v0.3.0-rc.1.0.20260102150405-abcdef123456).
var pseudoVersionSuffix = regexp.MustCompile(`(^|\.)[0-9]{14}-[0-9a-f]{12}$`)

func classify(s string) classified {
	if s == version.DevelVersion || s == version.Unknown {
		return classified{kind: devBuild}
	}
	v, err := utilversion.ParseSemantic(s)
	if err != nil {
		return classified{kind: unparsable}
	}
	if pseudoVersionSuffix.MatchString(v.PreRelease()) {
		return classified{kind: devBuild, v: v}
	}
	return classified{kind: releaseBuild, v: v}
}

// versionReadTimeout bounds reading the management cluster's version, so that an unreachable
// server fails the command promptly.
const versionReadTimeout = 15 * time.Second

// ManagementVersion returns the Flotilla version the management cluster behind kc records for its
// manager: the public copy kube-public/flotilla-version, which every authenticated user may read,
// else (for an admin, on a cluster whose manager did not publish it) flotilla-system's. It
// returns "" when the cluster records none.
func ManagementVersion(ctx context.Context, kc ctrlclient.Reader, kubeconfig string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, versionReadTimeout)
	defer cancel()
	cm := &corev1.ConfigMap{}
	err := kc.Get(ctx, ctrlclient.ObjectKey{Namespace: version.PublicNamespace, Name: version.ConfigMapName}, cm)
	switch {
	case err == nil:
		return cm.Data[version.ConfigMapKey], nil
	case !apierrors.IsNotFound(err) && !apierrors.IsForbidden(err):
		return "", fmt.Errorf("reaching the management cluster of %s: %w", kubeconfig, err)
	}
	recorded, recordedErr := version.Recorded(ctx, kc)
	if recordedErr != nil {
		return "", fmt.Errorf("reading the Flotilla version of the management cluster of %s (ConfigMap %s/%s): %w",
			kubeconfig, version.PublicNamespace, version.ConfigMapName, err)
	}
	return recorded, nil
}

// CheckCompatibility reads the version of the management cluster behind kc (whose kubeconfig is
// kubeconfig) and applies CheckVersions with this CLI's version (c.Version, else the binary's):
// it returns an *IncompatibleVersionError to refuse, and prints warnings to c.Out. Every command
// that works through a management cluster calls it first.
func (c *Client) CheckCompatibility(ctx context.Context, kc ctrlclient.Reader, kubeconfig string, access Access) error {
	clusterVersion, err := ManagementVersion(ctx, kc, kubeconfig)
	if err != nil {
		return err
	}
	cliVersion := c.Version
	if cliVersion == "" {
		cliVersion = version.Get().Version
	}
	warning, err := CheckVersions(cliVersion, clusterVersion, access)
	if err != nil {
		var incompatible *IncompatibleVersionError
		if errors.As(err, &incompatible) {
			incompatible.Kubeconfig = kubeconfig
		}
		return err
	}
	if warning != "" {
		_, _ = fmt.Fprintf(c.Out, "Warning: %s\n", warning) // a warning that cannot be shown does not stop the command
	}
	return nil
}
