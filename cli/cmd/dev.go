package cmd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/klog/v2/textlogger"

	"github.com/flotilla-dev/flotilla/cli/client"
	"github.com/flotilla-dev/flotilla/infrastructure/packet/devicesim"
	"github.com/flotilla-dev/flotilla/infrastructure/packet/metalsim"
)

// NewDevCmd returns `flotilla dev`, tools for developing and trying Flotilla without the
// services it talks to.
func NewDevCmd(streams genericiooptions.IOStreams, global *GlobalOptions) *cobra.Command {
	dev := newGroupCmd("dev", "Run simulators of the external services Flotilla talks to")
	dev.AddCommand(NewDevMetalAPICmd(streams, global))
	return dev
}

// DevMetalAPIOptions are the options of `flotilla dev metal-api`.
type DevMetalAPIOptions struct {
	genericiooptions.IOStreams
	Global *GlobalOptions
	// Listen is the address to serve on.
	Listen string
	// APIKey is the one key the simulator accepts.
	APIKey string
	// QueuedFor and ProvisioningFor are the device state delays.
	QueuedFor, ProvisioningFor time.Duration
	// MaxDevices is the per-project device quota; 0 for none.
	MaxDevices int
	// FailHostnames are hostname substrings of devices that fail to provision.
	FailHostnames []string
	// Boot makes active devices run their kubeadm cloud-init (package devicesim), with their
	// control planes under DevicesDir and binaries from Global.BinDir.
	Boot bool
	// DevicesDir is where booted devices keep their control planes:
	// $FLOTILLA_HOME/metal-devices unless set.
	DevicesDir string
}

// NewDevMetalAPICmd returns `flotilla dev metal-api`.
func NewDevMetalAPICmd(streams genericiooptions.IOStreams, global *GlobalOptions) *cobra.Command {
	o := &DevMetalAPIOptions{
		IOStreams: streams, Global: global,
		Listen: "127.0.0.1:8089", ProvisioningFor: 5 * time.Second, QueuedFor: time.Second, Boot: true,
	}
	cmd := &cobra.Command{
		Use:   "metal-api",
		Short: "Serve a simulated Equinix Metal (Packet) API for the Packet provider",
		Long: `Serve a simulator of the Equinix Metal API under /metal/v1: projects (created on first use of
their ID), devices that move from queued through provisioning to active, IP reservations and
assignments. Point a PacketDatacenterConfig's apiURL at http://ADDR/metal/v1 and use the same
API key. Faults can be injected while it runs with POST /_sim/faults (see docs/packet-provider.md);
GET /_sim/stats counts the requests served.

Active devices boot: each runs the kubeadm cloud-init Cluster API wrote as its user data.
kubeadm init starts etcd and kube-apiserver (with kwok) on the device's elastic IP, a loopback
address, with the version's binaries from the binary cache (--bin-dir); kubeadm join registers
the device's Node. Their data is under $FLOTILLA_HOME/metal-devices. Deleting a device, or
stopping the simulator, stops its processes. --boot=false keeps devices inert: a Packet cluster
then never gets past kubeadm init.`,
		Example: `  flotilla dev metal-api --listen 127.0.0.1:8089 --api-key secret
  PACKET_API_KEY=secret flotilla dev metal-api --provisioning-for 5s --boot=false`,
		Args: cobra.NoArgs,
		RunE: RunE(o),
	}
	f := cmd.Flags()
	f.StringVar(&o.Listen, "listen", o.Listen, "address to serve the API on")
	f.StringVar(&o.APIKey, "api-key", "", "the API key to accept in X-Auth-Token (default $"+client.PacketAPIKeyEnv+")")
	f.DurationVar(&o.QueuedFor, "queued-for", o.QueuedFor, "how long a new device stays queued")
	f.DurationVar(&o.ProvisioningFor, "provisioning-for", o.ProvisioningFor, "how long a device provisions before it is active")
	f.IntVar(&o.MaxDevices, "max-devices", 0, "device quota per project; creates past it are answered 429 (0: no quota)")
	f.StringSliceVar(&o.FailHostnames, "fail-hostname", nil, "devices whose hostname contains this fail to provision (repeatable)")
	f.BoolVar(&o.Boot, "boot", o.Boot, "boot active devices: run their kubeadm cloud-init (false: devices stay inert)")
	f.StringVar(&o.DevicesDir, "devices-dir", "", "directory for the booted devices' control planes (default $FLOTILLA_HOME/metal-devices)")
	return cmd
}

// Complete takes the API key from the environment when the flag does not give one, and puts
// the devices under the Flotilla home.
func (o *DevMetalAPIOptions) Complete(*cobra.Command, []string) error {
	if o.APIKey == "" {
		o.APIKey = os.Getenv(client.PacketAPIKeyEnv)
	}
	if o.DevicesDir == "" {
		o.DevicesDir = filepath.Join(o.Global.Home, "metal-devices")
	}
	return nil
}

// Validate checks the flags.
func (o *DevMetalAPIOptions) Validate() error {
	if o.APIKey == "" {
		return errors.New("an API key is required: pass --api-key or set " + client.PacketAPIKeyEnv)
	}
	if _, _, err := net.SplitHostPort(o.Listen); err != nil {
		return fmt.Errorf("--listen %q: %w", o.Listen, err)
	}
	if o.QueuedFor < 0 || o.ProvisioningFor < 0 || o.MaxDevices < 0 {
		return errors.New("--queued-for, --provisioning-for and --max-devices cannot be negative")
	}
	return nil
}

// Run serves until the context ends (Ctrl-C or SIGTERM), then stops every booted device's
// processes before it returns.
func (o *DevMetalAPIOptions) Run(ctx context.Context) error {
	opts := metalsim.Options{
		APIKey: o.APIKey, QueuedFor: o.QueuedFor, ProvisioningFor: o.ProvisioningFor, MaxDevicesPerProject: o.MaxDevices,
	}
	if o.Boot {
		// What devices do is what this command shows, so it is logged at level 0 (the CLI's
		// library logger starts at -v 1).
		log := textlogger.NewLogger(textlogger.NewConfig(textlogger.Verbosity(o.Global.Verbosity), textlogger.Output(o.ErrOut)))
		devices, err := devicesim.New(devicesim.Options{Dir: o.DevicesDir, BinRoot: o.Global.BinDir, Log: log.WithName("device")})
		if err != nil {
			return err
		}
		defer devices.Close()
		opts.Devices = devices
	}
	sim := metalsim.New(opts)
	for _, h := range o.FailHostnames {
		sim.InjectFault(metalsim.Fault{FailDevicesWithHostname: h})
	}
	return sim.ListenAndServe(ctx, o.Listen, func(addr net.Addr) {
		_, _ = fmt.Fprintf(o.Out, "Metal API simulator serving http://%s%s (Ctrl-C to stop)\n", addr, metalsim.BasePath)
		if o.Boot {
			_, _ = fmt.Fprintf(o.Out, "Active devices boot their kubeadm cloud-init; their control planes are under %s\n", o.DevicesDir)
		}
	})
}
