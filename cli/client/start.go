package client

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/template"
	"time"

	"github.com/flotilla-dev/flotilla/pkg/controlplane"
)

// LocalCluster is a local cluster of the home, as its directory records it.
type LocalCluster struct {
	// Name is the cluster's name, Dir its directory.
	Name, Dir string
	// Server is its API server's URL.
	Server string
	// ManagedBy is the name of the local management cluster whose manager runs its control
	// plane, when that is one of the home's; empty otherwise (a management cluster that
	// manages itself names itself).
	ManagedBy string
	// Management is true when the directory records a manager: a management cluster (or the
	// bootstrap cluster of one whose creation did not finish).
	Management bool
}

// LocalClusters lists the local clusters of the home that have chosen their endpoint: the
// management clusters first, then the others, each group by name.
func (c *Client) LocalClusters() ([]LocalCluster, error) {
	dirs, err := filepath.Glob(c.clusterDir("*"))
	if err != nil {
		return nil, fmt.Errorf("listing local clusters: %w", err)
	}
	var out []LocalCluster
	byServer := map[string]string{}
	for _, dir := range dirs {
		info, err := controlplane.Describe(dir)
		if err != nil {
			continue // never started
		}
		_, management := c.keeper(info.Name).Inspect(managerProcess)
		out = append(out, LocalCluster{Name: info.Name, Dir: dir, Server: info.Server, ManagedBy: info.ManagedBy, Management: management})
		byServer[info.Server] = info.Name
	}
	for i := range out {
		out[i].ManagedBy = byServer[out[i].ManagedBy]
	}
	slices.SortFunc(out, func(a, b LocalCluster) int {
		if a.Management != b.Management {
			if a.Management {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out, nil
}

// StartLocal brings back every local cluster of the home and the registry after their processes
// stopped (a restart of the machine): it starts the supervisor, which starts every recorded
// process again, then waits for them in dependency order, printing each step: the control
// plane of each management cluster, then its manager, then the control planes of the other
// clusters, then the registry. Processes that run are adopted; nothing runs twice. It goes on
// after a step fails and returns every failure at the end.
func (c *Client) StartLocal(ctx context.Context) error {
	start := time.Now()
	clusters, err := c.LocalClusters()
	if err != nil {
		return err
	}
	registry, hasRegistry := c.registryKeeper().Inspect(registryProcess)
	if len(clusters) == 0 && !hasRegistry {
		fmt.Fprintf(c.Out, "Nothing to start: no local cluster and no registry in %s\n", c.Home)
		return nil
	}
	fmt.Fprintf(c.Out, "Starting the local clusters of %s\n", c.Home)
	if err := c.forgiveFailures(ctx); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, c.WaitTimeout)
	defer cancel()
	var errs []error
	step := func(what string, run func() error) {
		began := time.Now()
		if err := run(); err != nil {
			fmt.Fprintf(c.Out, "✗ %s: %v\n", what, err)
			errs = append(errs, fmt.Errorf("%s: %w", what, err))
			return
		}
		fmt.Fprintf(c.Out, "✓ %s (%s)\n", what, formatElapsed(time.Since(began)))
	}
	step("supervisor", func() error { return c.EnsureSupervisor(ctx) })
	for _, cl := range clusters {
		cfg := controlplane.Config{Name: cl.Name, Dir: cl.Dir}
		what := "control plane of " + cl.Name
		if cl.ManagedBy != "" && cl.ManagedBy != cl.Name {
			what += " (managed by " + cl.ManagedBy + ")"
		}
		step(what+" at "+cl.Server, func() error { return controlplane.WaitReady(ctx, cfg) })
		if cl.Management {
			step("manager of "+cl.Name, func() error { return c.StartManager(ctx, cl.Name) })
		}
	}
	if hasRegistry {
		serving := registryServing(registry.Argv)
		step("registry at "+serving.Address, func() error {
			return waitProcess(ctx, c.registryKeeper(), registryProcess, "the registry", time.Minute, 100*time.Millisecond,
				func(ctx context.Context) error { return RegistryReady(ctx, serving.Address, serving.TLS) })
		})
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	fmt.Fprintf(c.Out, "Started %d local cluster(s) in %s; the supervisor keeps them running.\n", len(clusters), formatElapsed(time.Since(start)))
	return nil
}

// systemdUnit is the unit SystemdUnit writes.
var systemdUnit = template.Must(template.New("unit").Parse(`# The supervisor of the Flotilla home {{.Home}}: at boot it starts again every local cluster
# (control planes, managers) and the registry recorded there, and keeps them running.
# Written by 'flotilla start --print-systemd-unit' (see docs/local-provider.md). As a unit of
# your user:
#
#   mkdir -p ~/.config/systemd/user
#   flotilla start --print-systemd-unit > ~/.config/systemd/user/flotilla.service
#   systemctl --user daemon-reload && systemctl --user enable --now flotilla.service
#   loginctl enable-linger "$USER"   # start it at boot, before you log in
#
# As a system unit (/etc/systemd/system/flotilla.service), add User= and Group= of the home's
# owner under [Service], and WantedBy=multi-user.target under [Install].
[Unit]
Description=Flotilla supervisor of {{.Home}}

[Service]
Type=simple
ExecStart={{.Executable}} supervisor --home {{.Home}} --idle-exit 0
Restart=always
RestartSec=2
# Stopping the unit stops the supervisor only: the clusters keep running, and the next
# supervisor adopts them.
KillMode=process

[Install]
WantedBy=default.target
`))

// SystemdUnit returns a systemd unit that runs the supervisor of the home at boot, with the
// flotilla binary c.Executable.
func (c *Client) SystemdUnit() (string, error) {
	for _, p := range []string{c.Executable, c.Home} {
		if strings.ContainsAny(p, " \t\n\"'\\%$") {
			return "", fmt.Errorf("%q: systemd units need paths without spaces, quotes, backslashes, %% or $; use another --home or install flotilla elsewhere", p)
		}
	}
	if _, err := os.Stat(c.Executable); err != nil {
		return "", fmt.Errorf("the flotilla binary: %w", err)
	}
	var b strings.Builder
	err := systemdUnit.Execute(&b, struct{ Executable, Home string }{c.Executable, c.Home})
	return b.String(), err
}
