package inmemory

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	devv1 "sigs.k8s.io/cluster-api/test/infrastructure/docker/api/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/flotilla-dev/flotilla/pkg/process"
	"github.com/flotilla-dev/flotilla/pkg/tether"
)

// RBAC of the provider process, which runs with the manager's identity: Cluster API's
// DevCluster, DevMachine and DevMachineTemplate reconcilers (their markers in
// test/infrastructure/docker/internal/controllers), the CA and etcd Secrets of the clusters, and
// the bootstrap data Secrets of their machines. DevClusterTemplates are read by Cluster API's
// topology reconciler ("capi"), never here; these reconcilers record no events, and of Cluster
// API's objects they write only the bootstrapped annotation of Machines.
//
// +kubebuilder:rbac:groups=infrastructure.cluster.x-k8s.io,resources=devclusters;devclusters/status;devclusters/finalizers;devmachines;devmachines/status;devmachines/finalizers,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=infrastructure.cluster.x-k8s.io,resources=devmachinetemplates;devmachinetemplates/status,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=cluster.x-k8s.io,resources=clusters;clusters/status;machines;machines/status;machinesets;machinedeployments,verbs=get;list;watch
// +kubebuilder:rbac:groups=cluster.x-k8s.io,resources=machines,verbs=patch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;patch

// ProcessEnv is set in the environment of the provider process. A manager that finds it in its
// own environment runs in a provider process (a test binary that does not call
// RunProcessIfRequested) and starts no other.
const ProcessEnv = "FLOTILLA_INMEMORY_PROVIDER"

// The provider process restarts under the restart policy of package process (History.Exited).
const (
	// stopTimeout: how long a stopping manager waits for the process to end after SIGTERM.
	stopTimeout = 10 * time.Second
	// crdCheckInterval: how often a manager whose management cluster lacks the Dev CRDs looks
	// again.
	crdCheckInterval = 30 * time.Second
)

// Options configure the component.
type Options struct {
	// Executable is the program the provider process runs, with ProcessCommand as its first
	// argument: the flotilla binary (`flotilla inmemory-provider`), or a test binary whose
	// TestMain calls RunProcessIfRequested. Empty: the component starts no process, and
	// in-memory clusters wait.
	Executable string
	// Home is Flotilla's state directory: the process logs to <Home>/inmemory/provider.log and
	// records its pid in <Home>/inmemory/provider.pid.
	Home string
}

// Dir is where the provider process keeps its log and pid file, under Flotilla's home.
func Dir(home string) string { return filepath.Join(home, "inmemory") }

// PIDFile is the file the running provider process's pid is in.
func PIDFile(home string) string { return filepath.Join(Dir(home), "provider.pid") }

// LogFile is the provider process's log.
func LogFile(home string) string { return filepath.Join(Dir(home), "provider.log") }

// Setup adds the runner of the provider process to mgr. It runs on the leader only, so one
// process serves a management cluster's in-memory clusters. It starts the process once the
// management cluster has a DevCluster (a management cluster without in-memory clusters runs
// none), and restarts it whenever it ends until the manager stops: at once after a run of
// process.StableAfter, else after process.BackOff of its consecutive quick exits.
func Setup(_ context.Context, mgr ctrl.Manager, opts Options) error {
	if opts.Home == "" {
		return errors.New("in-memory provider: Home is required")
	}
	rc, err := restConfigOf(mgr.GetConfig())
	if err != nil {
		return fmt.Errorf("in-memory provider: %w", err)
	}
	config, err := json.Marshal(processConfig{Management: rc})
	if err != nil {
		return fmt.Errorf("in-memory provider: encoding its configuration: %w", err)
	}
	if err := mgr.Add(&runner{mgr: mgr, opts: opts, config: config}); err != nil {
		return fmt.Errorf("in-memory provider: %w", err)
	}
	return nil
}

// runner starts and restarts the provider process.
type runner struct {
	mgr    ctrl.Manager
	opts   Options
	config []byte
}

// Start waits for the Dev CRDs and a first DevCluster, then keeps the provider process running
// until ctx ends, and stops it.
func (s *runner) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName("inmemory-provider")
	switch {
	case s.opts.Executable == "":
		log.Info("Not starting Cluster API's in-memory provider: no executable to run it with")
		return nil
	case os.Getenv(ProcessEnv) != "":
		log.Info("Not starting Cluster API's in-memory provider from inside one")
		return nil
	}
	if err := s.waitForCRDs(ctx); err != nil {
		return nil //nolint:nilerr // ctx ended
	}
	if err := s.waitForDevCluster(ctx); err != nil {
		return err
	}
	var history process.History
	for {
		started := time.Now()
		err := s.run(ctx)
		if ctx.Err() != nil {
			return nil //nolint:nilerr // the manager stops; run stopped the process
		}
		history = history.Exited(err.Error(), time.Since(started), time.Now())
		delay := time.Until(history.NextStart)
		log.Error(err, "Cluster API's in-memory provider ended; restarting it", "after", delay.Round(time.Millisecond), "failures", history.Failures, "log", LogFile(s.opts.Home))
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(delay):
		}
	}
}

// waitForCRDs returns once the management cluster serves DevClusters, or ctx ended.
func (s *runner) waitForCRDs(ctx context.Context) error {
	logged := false
	for {
		_, err := s.mgr.GetRESTMapper().RESTMapping(devv1.GroupVersion.WithKind("DevCluster").GroupKind(), devv1.GroupVersion.Version)
		if err == nil {
			return nil
		}
		if !logged {
			ctrl.LoggerFrom(ctx).Info("Not starting Cluster API's in-memory provider until its CRDs are installed (flotilla upgrade cluster installs them)", "error", err.Error())
			logged = true
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(crdCheckInterval):
		}
	}
}

// waitForDevCluster returns once a DevCluster exists, watching their metadata.
func (s *runner) waitForDevCluster(ctx context.Context) error {
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(devv1.GroupVersion.WithKind("DevCluster"))
	informer, err := s.mgr.GetCache().GetInformer(ctx, obj)
	if err != nil {
		return fmt.Errorf("watching DevClusters: %w", err)
	}
	found := make(chan struct{})
	var once sync.Once
	registration, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { once.Do(func() { close(found) }) },
	})
	if err != nil {
		return fmt.Errorf("watching DevClusters: %w", err)
	}
	defer func() { _ = informer.RemoveEventHandler(registration) }()
	select {
	case <-ctx.Done():
		return nil
	case <-found:
		return nil
	}
}

// run starts the provider process in a network namespace of its own, hands it its configuration
// and the host's network namespace, and waits until it ends; when ctx ends first, it stops it
// (SIGTERM, then SIGKILL after stopTimeout). The process is killed if the manager dies.
func (s *runner) run(ctx context.Context) error {
	if err := os.MkdirAll(Dir(s.opts.Home), 0o700); err != nil {
		return fmt.Errorf("creating %s: %w", Dir(s.opts.Home), err)
	}
	logFile, err := os.OpenFile(LogFile(s.opts.Home), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("opening the provider's log: %w", err)
	}
	defer func() { _ = logFile.Close() }()
	hostNS, err := os.Open("/proc/self/ns/net")
	if err != nil {
		return fmt.Errorf("opening the host's network namespace: %w", err)
	}
	defer func() { _ = hostNS.Close() }()

	cmd := exec.Command(s.opts.Executable, ProcessCommand) //nolint:gosec // the flotilla binary itself
	cmd.Stdin = bytes.NewReader(s.config)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.ExtraFiles = []*os.File{hostNS} // file descriptor 3: hostNetworkFD
	cmd.Env = append(os.Environ(), ProcessEnv+"=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET}
	if err := tether.Start(cmd); err != nil {
		if errors.Is(err, syscall.EPERM) {
			return fmt.Errorf("starting the provider process in a network namespace of its own needs CAP_SYS_ADMIN (run the manager as root): %w", err)
		}
		return fmt.Errorf("starting the provider process: %w", err)
	}
	pidFile := PIDFile(s.opts.Home)
	_ = os.WriteFile(pidFile, []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o600)
	defer func() { _ = os.Remove(pidFile) }()
	ctrl.LoggerFrom(ctx).Info("Started Cluster API's in-memory provider", "pid", cmd.Process.Pid, "log", LogFile(s.opts.Home))

	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return fmt.Errorf("the provider process ended: %w", exitError(err))
	case <-ctx.Done():
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	timer := time.NewTimer(stopTimeout)
	defer timer.Stop()
	var waitErr error
	select {
	case waitErr = <-done:
	case <-timer.C:
		_ = cmd.Process.Kill()
		waitErr = <-done
	}
	ctrl.LoggerFrom(ctx).Info("Stopped Cluster API's in-memory provider", "exit", exitError(waitErr).Error())
	return nil
}

// exitError says how a process ended; Wait's nil (exit status 0) included.
func exitError(err error) error {
	if err == nil {
		return errors.New("exit status 0")
	}
	return err
}
