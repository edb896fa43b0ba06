package testenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"runtime/pprof"
	"strconv"
	"time"

	"github.com/go-logr/logr/funcr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

// StartManager starts a controller-runtime manager against the Environment, with whatever setup
// registers on it (a component's Setup, a reconciler's SetupWithManager), logging to stderr at
// the verbosity in FLOTILLA_TEST_VERBOSE (default 0). It serves the installed webhooks when the
// Environment has them. It returns once the manager is ready (see RunManager); the returned
// context ends with stop, which stops the manager and reports how it ended.
func (e *Environment) StartManager(setup func(ctx context.Context, mgr ctrl.Manager) error) (context.Context, func() error, error) {
	return e.StartManagerWith(ManagerOptions{}, setup)
}

// ManagerOptions adjust the manager StartManagerWith starts.
type ManagerOptions struct {
	// Config is the manager's REST config, Config when nil: a copy of Config whose transport
	// counts requests, say.
	Config *rest.Config
	// Restart lets the controllers take names that controllers of a manager this process
	// stopped had: a test restarts its controllers as a new process would.
	Restart bool
}

// StartManagerWith is StartManager with options.
func (e *Environment) StartManagerWith(o ManagerOptions, setup func(ctx context.Context, mgr ctrl.Manager) error) (context.Context, func() error, error) {
	verbosity, _ := strconv.Atoi(os.Getenv("FLOTILLA_TEST_VERBOSE"))
	ctrl.SetLogger(funcr.New(func(prefix, args string) { fmt.Fprintln(os.Stderr, prefix, args) },
		funcr.Options{Verbosity: verbosity}))
	opts := ctrl.Options{
		Scheme:                 e.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		// controller-runtime refuses a controller name used twice in a process.
		Controller: ctrlconfig.Controller{SkipNameValidation: &o.Restart},
	}
	webhooks := e.env.WebhookInstallOptions.LocalServingPort != 0
	if webhooks {
		opts.WebhookServer = webhook.NewServer(e.WebhookServerOptions())
	}
	cfg := o.Config
	if cfg == nil {
		cfg = e.Config
	}
	mgr, err := ctrl.NewManager(cfg, opts)
	if err != nil {
		return nil, nil, fmt.Errorf("creating manager: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := setup(ctx, mgr); err != nil {
		cancel()
		return nil, nil, fmt.Errorf("setting up the manager: %w", err)
	}
	// The manager's context ends when it stops (RunManager cancels the context it runs in);
	// cancel ends the context setup was given too.
	runCtx, stop, err := RunManager(ctx, mgr, mgr.Start, Readiness{Webhooks: webhooks})
	if err != nil {
		cancel()
		return nil, nil, err
	}
	return runCtx, func() error {
		defer cancel()
		return stop()
	}, nil
}

// Readiness is what RunManager waits for, besides the manager's cache.
type Readiness struct {
	// Webhooks waits for the manager's webhook server to listen (its StartedChecker). Set it when
	// the API server has webhook configurations pointing at the manager: until the server
	// listens, the API server's calls are refused and so are the objects they admit. Leave it
	// unset for a manager that serves no webhooks: asking for its webhook server would start one.
	Webhooks bool
	// Checks must all pass too: the Ready of Flotilla's manager, say.
	Checks []func() error
}

// readyTimeout bounds the wait for a manager to be ready, stopTimeout the wait for it to stop;
// generous because the machine may be busy with other test packages.
const (
	readyTimeout = 2 * time.Minute
	stopTimeout  = time.Minute
)

// RunManager runs a manager for a test until stop is called, and returns once the manager is
// ready for the test's first request: elected (at once without leader election), its webhook
// server listening when r.Webhooks, every check in r.Checks passing, and its cache synced.
// run is what runs the manager: mgr.Start, or the Run of Flotilla's manager (manager.New)
// around mgr; it runs with a context derived from ctx, which RunManager returns and stop cancels.
// stop returns run's error, or says that run did not return within a minute. When run returns
// before the manager is ready, or the manager is not ready within two minutes, RunManager stops it
// and returns why.
func RunManager(ctx context.Context, mgr ctrl.Manager, run func(context.Context) error, r Readiness) (context.Context, func() error, error) {
	checks := r.Checks
	if r.Webhooks {
		// GetWebhookServer adds the server to the manager, which starts it even when no webhook
		// is registered on it yet.
		started := mgr.GetWebhookServer().StartedChecker()
		checks = append([]func() error{func() error { return started(nil) }}, checks...)
	}
	runCtx, cancel := context.WithCancel(ctx)
	exited := make(chan struct{})
	var runErr error
	go func() {
		defer close(exited)
		runErr = run(runCtx)
	}()
	stop := func() error {
		cancel()
		select {
		case <-exited:
			if errors.Is(runErr, context.DeadlineExceeded) {
				// A runnable that did not end within the manager's grace period is a bug; its
				// stack says which one.
				var stacks bytes.Buffer
				_ = pprof.Lookup("goroutine").WriteTo(&stacks, 1)
				return fmt.Errorf("%w; the goroutines left:\n%s", runErr, stacks.String())
			}
			return runErr
		case <-time.After(stopTimeout):
			return fmt.Errorf("the manager did not stop within %s", stopTimeout)
		}
	}
	if err := waitReady(runCtx, mgr, exited, checks); err != nil {
		if stopErr := stop(); stopErr != nil {
			err = fmt.Errorf("%w; the manager: %w", err, stopErr)
		}
		return nil, nil, err
	}
	return runCtx, stop, nil
}

// waitReady waits until mgr is elected, each of checks passes and mgr's cache has synced; it
// fails when exited closes first or readyTimeout passes.
func waitReady(ctx context.Context, mgr ctrl.Manager, exited <-chan struct{}, checks []func() error) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	go func() {
		// A manager that stops ends the wait, including WaitForCacheSync's.
		select {
		case <-exited:
			cancel()
		case <-ctx.Done():
		}
	}()
	var last error
	err := wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(context.Context) (bool, error) {
		select {
		case <-mgr.Elected():
		default:
			last = fmt.Errorf("not elected yet")
			return false, nil
		}
		last = firstFailure(checks)
		return last == nil, nil
	})
	if err == nil && !mgr.GetCache().WaitForCacheSync(ctx) {
		err, last = ctx.Err(), fmt.Errorf("the cache has not synced")
	}
	select {
	case <-exited:
		return fmt.Errorf("the manager stopped before it was ready")
	default:
	}
	if err != nil {
		return fmt.Errorf("waiting for the manager to be ready: %w (%v)", err, last)
	}
	return nil
}

// firstFailure returns the error of the first of checks that fails, nil when all pass.
func firstFailure(checks []func() error) error {
	for _, check := range checks {
		if err := check(); err != nil {
			return err
		}
	}
	return nil
}
