package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/flotilla-dev/flotilla/cli/client"
	"github.com/flotilla-dev/flotilla/cli/cmd"
	clusterwebhooks "github.com/flotilla-dev/flotilla/cluster/webhooks"
	"github.com/flotilla-dev/flotilla/manager"
	"github.com/flotilla-dev/flotilla/pkg/controlplane"
	"github.com/flotilla-dev/flotilla/pkg/supervisor"
	"github.com/flotilla-dev/flotilla/pkg/version"
)

// managerOptions are the flags of `flotilla manager`.
type managerOptions struct {
	streams genericiooptions.IOStreams

	kubeconfig     string
	identitiesDir  string
	renewFrom      string
	components     []string
	healthAddr     string
	metricsAddr    string
	endpointsFile  string
	webhookPort    int
	webhookCertDir string
	leaderElect    bool
	home           string
	binDir         string
	keepSupervisor bool
	adminUsers     []string
	adminGroups    []string

	identities manager.Identities
}

// newManagerCmd returns `flotilla manager`, which runs Flotilla's controllers. It lives here,
// beside main, and not in cli/cmd: it is the one command that links the manager and its
// controllers, which the rest of the CLI must not import (cli/cmd's TestTheCLILinksNoController).
func newManagerCmd(streams genericiooptions.IOStreams) *cobra.Command {
	o := &managerOptions{streams: streams}
	known := make([]string, 0, len(manager.Components()))
	for _, c := range manager.Components() {
		known = append(known, c.Name)
	}
	command := &cobra.Command{
		Use:   "manager",
		Short: "Run Flotilla's controllers against a management cluster",
		Long: `Run Flotilla's controllers (Cluster API core, the local provider, ...) in one process
against a management cluster, until interrupted.

Each component runs as its own identity, the ServiceAccount flotilla-system/<component>, and
the manager's own work (the cluster cache, webhook registration) as flotilla-system/manager,
each authorised by the roles generated for it. With --identities, each identity authenticates
with the kubeconfig <dir>/<identity>.kubeconfig (the CLI writes them for local management
clusters); with --kubeconfig, every identity uses that one kubeconfig, which must then be
allowed what all of them are.

Webhooks are served on 127.0.0.1 with a certificate generated at start and registered with the
management cluster by URL, so the manager runs on the machine of the cluster's API server.
Probes answer at http://<health-addr>/healthz and /readyz, metrics at https://<metrics-addr>/metrics
to clients the management cluster authorizes to get the non-resource URL /metrics (a bearer
token, as Prometheus sends). Both take a port the kernel picks unless told otherwise; with
--endpoints-file the manager records where, once it listens.
For a local management cluster the CLI starts the manager itself; run it by hand to debug.`,
		Example: `  # Run every component against a local management cluster, as the CLI does
  flotilla manager --identities ~/.flotilla/clusters/mgmt/manager/identities

  # Run every component with one kubeconfig (allowed what every identity is)
  flotilla manager --kubeconfig mgmt/mgmt.kubeconfig

  # Run only Cluster API's core controllers, with leader election
  flotilla manager --kubeconfig mgmt/mgmt.kubeconfig --components capi --leader-elect`,
		Args: cobra.NoArgs,
		RunE: cmd.RunE(o),
	}
	f := command.Flags()
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig every identity uses (default: $KUBECONFIG, ~/.kube/config or in-cluster); see --identities")
	f.StringVar(&o.identitiesDir, "identities", "", "directory of one kubeconfig per identity, <identity>.kubeconfig (the manager's own and each component's)")
	f.StringVar(&o.renewFrom, "renew-identities-from", "", "directory of the local control plane whose CA signs the certificates of --identities: renew them before they expire")
	f.StringSliceVar(&o.components, "components", []string{manager.AllComponents},
		fmt.Sprintf("components to run, comma separated: %s, or %q", strings.Join(known, ", "), manager.AllComponents))
	f.StringVar(&o.healthAddr, "health-addr", manager.DefaultHealthProbeBindAddress, "address of the /healthz and /readyz probes (\"0\" disables)")
	f.StringVar(&o.metricsAddr, "metrics-addr", manager.DefaultMetricsBindAddress, "address of the HTTPS /metrics endpoint (\"0\" disables)")
	f.StringVar(&o.endpointsFile, "endpoints-file", "", "file to record the addresses of the probes and metrics in (JSON: health, metrics), once the manager listens")
	f.IntVar(&o.webhookPort, "webhook-port", 0, "port of the webhook server on 127.0.0.1 (0 picks a free port)")
	f.StringVar(&o.webhookCertDir, "webhook-cert-dir", "", "directory for the webhook serving certificate generated at start (default: a temporary directory)")
	f.BoolVar(&o.leaderElect, "leader-elect", false, "take a Lease in "+manager.Namespace+" before running controllers, so one replica is active")
	f.StringVar(&o.home, "home", "", "Flotilla's state directory (default: $FLOTILLA_HOME or ~/.flotilla)")
	f.StringVar(&o.binDir, "bin-dir", "", "control plane binary cache (default: $FLOTILLA_BIN_CACHE or ~/.cache/flotilla/bin)")
	f.BoolVar(&o.keepSupervisor, "keep-supervisor", false, "start the supervisor of --home ('flotilla supervisor') whenever none runs, as the CLI does for the managers of local clusters")
	f.StringSliceVar(&o.adminGroups, "admin-groups", clusterwebhooks.DefaultAdmins().Groups,
		"groups whose members the webhooks trust as admins: they alone create management clusters, set a cluster's management cluster and serve local control planes off loopback (docs/security.md)")
	f.StringSliceVar(&o.adminUsers, "admin-users", nil, "users the webhooks trust as admins, besides the members of --admin-groups")
	return command
}

// Complete loads the credentials of the identities: one kubeconfig per identity from
// --identities, or the one kubeconfig for all of them.
func (o *managerOptions) Complete(*cobra.Command, []string) error {
	if o.identitiesDir != "" {
		o.identities = client.ManagerIdentities(o.identitiesDir)
		return nil
	}
	var cfg *rest.Config
	var err error
	if o.kubeconfig != "" {
		cfg, err = clientcmd.BuildConfigFromFlags("", o.kubeconfig)
	} else {
		cfg, err = ctrl.GetConfig()
	}
	if err != nil {
		return fmt.Errorf("loading kubeconfig: %w; pass --kubeconfig with the management cluster's kubeconfig, or --identities", err)
	}
	o.identities = manager.OneIdentity(cfg)
	return nil
}

// Validate checks the flags.
func (o *managerOptions) Validate() error {
	if o.webhookPort < 0 || o.webhookPort > 65535 {
		return fmt.Errorf("--webhook-port %d is not a port number (0-65535)", o.webhookPort)
	}
	if o.identitiesDir != "" && o.kubeconfig != "" {
		return fmt.Errorf("--identities and --kubeconfig both give credentials: pass one")
	}
	if o.renewFrom != "" && o.identitiesDir == "" {
		return fmt.Errorf("--renew-identities-from renews the certificates of --identities: pass --identities too")
	}
	return nil
}

// Run runs the manager until SIGINT or SIGTERM.
func (o *managerOptions) Run(ctx context.Context) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()

	// The root command sets up logging (with -v) and puts the logger into the context; without
	// it (the command used on its own) log to the error stream.
	if _, err := logr.FromContext(ctx); err != nil {
		log := textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(o.streams.ErrOut)))
		ctrl.SetLogger(log)
		klog.SetLogger(log)
		ctx = ctrl.LoggerInto(ctx, log)
	}

	executable, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding the flotilla binary: %w", err)
	}
	m, err := manager.New(ctx, o.identities, manager.Options{
		Executable:             executable,
		Components:             o.components,
		HealthProbeBindAddress: o.healthAddr,
		MetricsBindAddress:     o.metricsAddr,
		WebhookPort:            o.webhookPort,
		WebhookCertDir:         o.webhookCertDir,
		LeaderElection:         o.leaderElect,
		Home:                   o.home,
		BinRoot:                o.binDir,
		Version:                version.Get().Version,
		Admins:                 clusterwebhooks.Admins{Users: o.adminUsers, Groups: o.adminGroups},
	})
	if err != nil {
		return err
	}
	if o.endpointsFile != "" {
		if err := client.WriteManagerServing(o.endpointsFile, client.ManagerServing{Health: m.ProbeAddress(), Metrics: m.MetricsAddress()}); err != nil {
			return err
		}
	}
	if o.keepSupervisor {
		go o.keepSupervisorRunning(ctx)
	}
	if o.renewFrom != "" {
		go client.KeepManagerIdentitiesRenewed(ctx, o.renewFrom, o.identitiesDir)
	}
	return m.Run(ctx)
}

// supervisorCheckInterval is how often a manager run with --keep-supervisor checks that the
// supervisor of its home runs.
const supervisorCheckInterval = 10 * time.Second

// keepSupervisorRunning starts the supervisor of the home whenever none runs, until ctx ends:
// the supervisor restarts this manager, and this manager the supervisor.
func (o *managerOptions) keepSupervisorRunning(ctx context.Context) {
	log := ctrl.LoggerFrom(ctx).WithName("supervisor")
	home := o.home
	if home == "" {
		home = controlplane.HomeDir()
	}
	exe, err := os.Executable()
	if err != nil {
		log.Error(err, "Cannot keep the supervisor running: the flotilla executable is unknown")
		return
	}
	ticker := time.NewTicker(supervisorCheckInterval)
	defer ticker.Stop()
	for {
		if pid, err := supervisor.Ensure(ctx, home, client.SupervisorSpec(exe, home)); err != nil {
			log.Error(err, "Starting the supervisor")
		} else if pid != 0 {
			log.Info("Started the supervisor, which was not running", "pid", pid, "home", home)
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}
