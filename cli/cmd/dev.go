package cmd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/flotilla-dev/flotilla/cli/client"
	"github.com/flotilla-dev/flotilla/infrastructure/packet/metalsim"
)

// NewDevCmd returns `flotilla dev`, tools for developing and trying Flotilla without the
// services it talks to.
func NewDevCmd(streams genericiooptions.IOStreams) *cobra.Command {
	dev := newGroupCmd("dev", "Run simulators of the external services Flotilla talks to")
	dev.AddCommand(NewDevMetalAPICmd(streams))
	return dev
}

// DevMetalAPIOptions are the options of `flotilla dev metal-api`.
type DevMetalAPIOptions struct {
	genericiooptions.IOStreams
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
}

// NewDevMetalAPICmd returns `flotilla dev metal-api`.
func NewDevMetalAPICmd(streams genericiooptions.IOStreams) *cobra.Command {
	o := &DevMetalAPIOptions{IOStreams: streams, Listen: "127.0.0.1:8089", ProvisioningFor: 5 * time.Second, QueuedFor: time.Second}
	cmd := &cobra.Command{
		Use:   "metal-api",
		Short: "Serve a simulated Equinix Metal (Packet) API for the Packet provider",
		Long: `Serve a simulator of the Equinix Metal API under /metal/v1: projects (created on first use of
their ID), devices that move from queued through provisioning to active, IP reservations and
assignments. Point a PacketDatacenterConfig's apiURL at http://ADDR/metal/v1 and use the same
API key. Faults can be injected while it runs with POST /_sim/faults (see docs/packet-provider.md);
GET /_sim/stats counts the requests served.`,
		Example: `  flotilla dev metal-api --listen 127.0.0.1:8089 --api-key secret
  PACKET_API_KEY=secret flotilla dev metal-api --provisioning-for 5s`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Complete(); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Listen, "listen", o.Listen, "address to serve the API on")
	f.StringVar(&o.APIKey, "api-key", "", "the API key to accept in X-Auth-Token (default $"+client.PacketAPIKeyEnv+")")
	f.DurationVar(&o.QueuedFor, "queued-for", o.QueuedFor, "how long a new device stays queued")
	f.DurationVar(&o.ProvisioningFor, "provisioning-for", o.ProvisioningFor, "how long a device provisions before it is active")
	f.IntVar(&o.MaxDevices, "max-devices", 0, "device quota per project; creates past it are answered 429 (0: no quota)")
	f.StringSliceVar(&o.FailHostnames, "fail-hostname", nil, "devices whose hostname contains this fail to provision (repeatable)")
	return cmd
}

// Complete takes the API key from the environment when the flag does not give one.
func (o *DevMetalAPIOptions) Complete() error {
	if o.APIKey == "" {
		o.APIKey = os.Getenv(client.PacketAPIKeyEnv)
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

// Run serves until the context ends (Ctrl-C).
func (o *DevMetalAPIOptions) Run(ctx context.Context) error {
	sim := metalsim.New(metalsim.Options{
		APIKey: o.APIKey, QueuedFor: o.QueuedFor, ProvisioningFor: o.ProvisioningFor, MaxDevicesPerProject: o.MaxDevices,
	})
	for _, h := range o.FailHostnames {
		sim.InjectFault(metalsim.Fault{FailDevicesWithHostname: h})
	}
	return sim.ListenAndServe(ctx, o.Listen, func(addr net.Addr) {
		_, _ = fmt.Fprintf(o.Out, "Metal API simulator serving http://%s%s (Ctrl-C to stop)\n", addr, metalsim.BasePath)
	})
}
