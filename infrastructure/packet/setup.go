package packet

import (
	"context"
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	"github.com/flotilla-dev/flotilla/infrastructure/packet/credentials"
	"github.com/flotilla-dev/flotilla/infrastructure/packet/reconcilers/packetcluster"
	"github.com/flotilla-dev/flotilla/infrastructure/packet/reconcilers/packetmachine"
)

// Options configure the Packet provider's reconcilers.
type Options struct {
	// NewMetalClient builds Metal API clients; credentials.NewMetalClient when nil.
	NewMetalClient credentials.NewClientFunc
	// MachineConcurrency is how many PacketMachines are reconciled at once; 10 when 0.
	MachineConcurrency int
}

// Setup registers the PacketCluster and PacketMachine reconcilers with mgr.
func Setup(ctx context.Context, mgr ctrl.Manager, opts Options) error {
	if opts.NewMetalClient == nil {
		opts.NewMetalClient = credentials.NewMetalClient
	}
	if opts.MachineConcurrency == 0 {
		opts.MachineConcurrency = 10
	}
	if err := (&packetcluster.Reconciler{
		Client:         mgr.GetClient(),
		APIReader:      mgr.GetAPIReader(),
		NewMetalClient: opts.NewMetalClient,
	}).SetupWithManager(ctx, mgr, controller.Options{}); err != nil {
		return fmt.Errorf("packet provider: %w", err)
	}
	if err := (&packetmachine.Reconciler{
		Client:         mgr.GetClient(),
		APIReader:      mgr.GetAPIReader(),
		NewMetalClient: opts.NewMetalClient,
	}).SetupWithManager(ctx, mgr, controller.Options{MaxConcurrentReconciles: opts.MachineConcurrency}); err != nil {
		return fmt.Errorf("packet provider: %w", err)
	}
	return nil
}
