package manager

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/cluster-api/core/setup"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// componentManager runs the controller-runtime manager of one component, authenticated as the
// component's identity. The manager of ManagerIdentity runs it as a runnable that needs no
// leader election (every replica runs every component's manager, whose caches its webhooks
// read; the component's controllers wait for the component's own Lease).
type componentManager struct {
	mgr  ctrl.Manager
	name string
	// synced is set once the component's caches have synced and its runnables started.
	synced atomic.Bool
}

// NeedLeaderElection implements manager.LeaderElectionRunnable.
func (*componentManager) NeedLeaderElection() bool { return false }

// componentSyncTimeout bounds the wait for a component's caches, controller-runtime's default
// for a controller's: a cache whose role does not allow its list or watch never syncs.
const componentSyncTimeout = 2 * time.Minute

// Start runs the component's manager until ctx ends. It fails when the manager does, or when its
// caches have not synced within componentSyncTimeout, which is what a rule missing from the
// component's role looks like (the API server's refusals are logged meanwhile).
func (cm *componentManager) Start(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- cm.mgr.Start(ctx) }()
	timeout := time.NewTimer(componentSyncTimeout)
	defer timeout.Stop()
	for {
		select {
		case err := <-done:
			if err != nil {
				return fmt.Errorf("component %s: %w", cm.name, err)
			}
			return nil
		case <-timeout.C:
			if !cm.synced.Load() {
				cancel()
				stopped := <-done
				return errors.Join(stopped, fmt.Errorf("component %s: its caches did not sync within %s; is a rule missing from its role (config/rbac/%s)? The API server's refusals are in the log", cm.name, componentSyncTimeout, cm.name))
			}
		}
	}
}

// setupComponent builds the manager of component c under its identity, sets c up on it and
// adds it to the manager of ManagerIdentity.
func (m *Manager) setupComponent(ctx context.Context, c Component, identities Identities, opts Options, s *runtime.Scheme, server *recordingServer, deps Deps) error {
	restConfig, err := identityRESTConfig(identities, c.Name, m.id+"-"+c.Name)
	if err != nil {
		return fmt.Errorf("setting up component %s: %w", c.Name, err)
	}
	mgr, err := ctrl.NewManager(restConfig, componentOptions(opts, m.id, c.Name, s, server))
	if err != nil {
		return fmt.Errorf("creating the manager of component %s: %w", c.Name, err)
	}
	cm := &componentManager{mgr: mgr, name: c.Name}
	if err := c.Setup(ctx, mgr, deps); err != nil {
		return fmt.Errorf("setting up component %s: %w", c.Name, err)
	}
	// Runnables that need no leader election start once the caches have synced.
	if err := mgr.Add(syncedMarker{&cm.synced}); err != nil {
		return fmt.Errorf("setting up component %s: %w", c.Name, err)
	}
	if err := m.mgr.Add(cm); err != nil {
		return fmt.Errorf("adding the manager of component %s: %w", c.Name, err)
	}
	m.running = append(m.running, cm)
	return nil
}

// componentOptions are the options of the manager of component name in the process whose
// manager is id: its own cache and leader election Lease (flotilla-<name>, shared by every
// process that runs the component, so that one of them leads), the shared webhook server, and
// no probe or metrics endpoint of its own.
func componentOptions(opts Options, id, name string, s *runtime.Scheme, server *recordingServer) ctrl.Options {
	return ctrl.Options{
		Scheme: s,
		Cache:  setup.ManagerCacheOptions(s, informerName(id+"-"+name), "", syncPeriod),
		Client: setup.ManagerClientOptions(),
		Controller: ctrlconfig.Controller{
			SkipNameValidation: ptr.To(opts.SkipControllerNameValidation),
		},
		HealthProbeBindAddress:        "0",
		Metrics:                       metricsserver.Options{BindAddress: "0"},
		LeaderElection:                opts.LeaderElection,
		LeaderElectionID:              "flotilla-" + name,
		LeaderElectionNamespace:       Namespace,
		LeaderElectionResourceLock:    resourcelock.LeasesResourceLock,
		LeaderElectionReleaseOnCancel: true,
		WebhookServer:                 sharedWebhookServer{server},
	}
}

// syncedMarker sets a flag when its manager starts the runnables that need no leader election,
// which it does once its caches have synced.
type syncedMarker struct{ synced *atomic.Bool }

func (syncedMarker) NeedLeaderElection() bool { return false }

func (s syncedMarker) Start(context.Context) error {
	s.synced.Store(true)
	return nil
}

// componentsSynced is a readiness check: it passes once every component's caches have synced.
func (m *Manager) componentsSynced() error {
	for _, cm := range m.running {
		if !cm.synced.Load() {
			return fmt.Errorf("component %s has not started yet", cm.name)
		}
	}
	return nil
}
