package nodenet

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/flotilla-dev/flotilla/pkg/process"
)

// Egress keeps the processes of one local control plane on this machine: they start in a cgroup
// v2 group of their own (Dir, for process.Spec.Cgroup), and the host's OUTPUT chains, IPv4 and
// IPv6, send what the group's sockets send to a chain FLOTILLA-<ID>-OUT of its own that lets
// through the loopback interface (every address of this machine, its own LAN address included,
// is delivered there) and the bridge of the control plane's node network, and rejects the rest
// at once ("network prohibited": the connect fails with EHOSTUNREACH, nothing leaves). A
// kube-apiserver runs as root in the host's network namespace and dials what its users name:
// Endpoints behind services/proxy, webhooks, APIServices; with Egress none of them can be an
// address of the machine's LAN or beyond.
type Egress struct {
	// ID names the group and the chain: the ClusterID of the control plane's directory.
	ID string
	// Bridge is the bridge of the control plane's node network (Cluster.Bridge), "" for none.
	Bridge string
}

// cgroup is the group's path below the cgroup v2 root.
func (e Egress) cgroup() string { return "flotilla/controlplane-" + e.ID }

func (e Egress) chain() string { return "FLOTILLA-" + strings.ToUpper(e.ID) + "-OUT" }

// rules are the OUTPUT rules of e, in the IPv4 and the IPv6 filter tables.
func (e Egress) rules() []tableRules {
	out := e.chain()
	var tables []tableRules
	for _, ipv6 := range []bool{false, true} {
		rules := []string{"-A " + out + " -o lo -j RETURN"}
		if e.Bridge != "" && !ipv6 {
			rules = append(rules, "-A "+out+" -o "+e.Bridge+" -j RETURN")
		}
		reject := "icmp-net-prohibited"
		if ipv6 {
			reject = "icmp6-adm-prohibited"
		}
		rules = append(rules, "-A "+out+" -j REJECT --reject-with "+reject)
		tables = append(tables, tableRules{
			ipv6:   ipv6,
			table:  "filter",
			chains: map[string][]string{out: rules},
			// As iptables -S writes it, quotes included.
			jumps: []jump{{chain: "OUTPUT", rule: `-m cgroup --path "` + e.cgroup() + `" -j ` + out}},
		})
	}
	return tables
}

// EnsureEgress makes e's cgroup and rules exist and returns the cgroup's directory, for
// process.Spec.Cgroup. It changes only what differs.
func EnsureEgress(ctx context.Context, e Egress) (string, error) {
	if !idPattern.MatchString(e.ID) {
		return "", fmt.Errorf("egress ID %q: want 8 lowercase hexadecimal digits", e.ID)
	}
	root, err := process.Cgroup2Root()
	if err != nil {
		return "", fmt.Errorf("keeping a control plane on this machine needs the cgroup v2 hierarchy: %w", err)
	}
	dir := filepath.Join(root, e.cgroup())
	// The rules name the group by path, and the kernel resolves it when a rule is added:
	// the group first.
	if err := os.MkdirAll(dir, 0o755); err != nil { //nolint:gosec // a cgroup's directory, as the kernel's tools expect
		return "", fmt.Errorf("creating cgroup %s: %w", dir, err)
	}
	if err := ensureRules(ctx, "", e.rules()); err != nil {
		return "", fmt.Errorf("confining the control plane to this machine: %w", err)
	}
	return dir, nil
}

// DeleteEgress removes the rules and the cgroup of the Egress whose ID is id; its processes must
// have exited. What is already gone is not an error.
func DeleteEgress(ctx context.Context, id string) error {
	if !idPattern.MatchString(id) {
		return fmt.Errorf("egress ID %q: want 8 lowercase hexadecimal digits", id)
	}
	e := Egress{ID: id}
	var errs []error
	for _, t := range e.rules() {
		if err := deleteRules(ctx, "", t); err != nil {
			errs = append(errs, err)
		}
	}
	if root, err := process.Cgroup2Root(); err == nil {
		if err := os.Remove(filepath.Join(root, e.cgroup())); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("removing the cgroup of control plane %s: %w", id, err))
		}
	}
	return errors.Join(errs...)
}
