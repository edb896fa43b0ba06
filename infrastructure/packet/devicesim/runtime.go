package devicesim

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/kubernetes"

	"github.com/flotilla-dev/flotilla/infrastructure/packet/metal"
	"github.com/flotilla-dev/flotilla/infrastructure/packet/metalsim"
	"github.com/flotilla-dev/flotilla/pkg/controlplane"
)

// retryInterval is how often a booting device looks again at what it waits for: its elastic IP,
// the control plane it joins, its API server taking writes. Each look is a function call into the
// simulator or a request to the device's own API server, so looking often costs little, and a
// device that boots late holds back Cluster API seeing kubeadm init.
const retryInterval = 100 * time.Millisecond

// Options configure a Runtime.
type Options struct {
	// Dir holds the control planes of the devices, one directory per device ID. Required.
	Dir string
	// BinRoot is the control plane binary cache (binaries.DefaultRoot()), with one directory per
	// Kubernetes version. Required.
	BinRoot string
	// Log receives what the devices do; logr.Discard() when unset.
	Log logr.Logger
}

// Runtime boots the devices of a Metal API simulator; set it as metalsim.Options.Devices. Create
// it with New, and Close it when the simulator stops.
type Runtime struct {
	opts Options

	mu      sync.Mutex
	devices map[string]*running
	// controlPlanes are the API servers devices booted with kubeadm init, by endpoint
	// (host:port), for the devices that join them.
	controlPlanes map[string]*controlPlane
	closed        bool
}

var _ metalsim.DeviceRuntime = (*Runtime)(nil)

// running is one booted device.
type running struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// controlPlane is what a kubeadm init device offers the devices that join it.
type controlPlane struct {
	deviceID string
	ca       *x509.Certificate
	client   kubernetes.Interface
}

// New returns a Runtime.
func New(opts Options) (*Runtime, error) {
	if opts.Dir == "" || opts.BinRoot == "" {
		return nil, errors.New("devicesim: Dir and BinRoot are required")
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("devicesim: %w", err)
	}
	opts.Dir = dir
	if opts.Log.GetSink() == nil {
		opts.Log = logr.Discard()
	}
	return &Runtime{opts: opts, devices: map[string]*running{}, controlPlanes: map[string]*controlPlane{}}, nil
}

// Boot starts running device d's userdata in the background; see the package documentation.
func (r *Runtime) Boot(d metal.Device, current func() (metal.Device, bool)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed || r.devices[d.ID] != nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	dev := &running{cancel: cancel, done: make(chan struct{})}
	r.devices[d.ID] = dev
	log := r.opts.Log.WithValues("device", d.ID, "hostname", d.Hostname)
	go func() {
		defer close(dev.done)
		if err := r.run(logr.NewContext(ctx, log), d, current); err != nil && ctx.Err() == nil {
			log.Error(err, "Boot failed; the device runs nothing")
		}
		<-ctx.Done()
		r.cleanUp(log, d.ID)
	}()
}

// Shutdown stops device id; it returns at once, the processes stop in the background.
func (r *Runtime) Shutdown(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if dev := r.devices[id]; dev != nil {
		dev.cancel()
	}
}

// Close shuts every device down and waits until their processes are stopped.
func (r *Runtime) Close() {
	r.mu.Lock()
	r.closed = true
	var waits []chan struct{}
	for _, dev := range r.devices {
		dev.cancel()
		waits = append(waits, dev.done)
	}
	r.mu.Unlock()
	for _, done := range waits {
		<-done
	}
}

// Running returns the IDs of the devices that are booted or booting.
func (r *Runtime) Running() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	ids := make([]string, 0, len(r.devices))
	for id := range r.devices {
		ids = append(ids, id)
	}
	return ids
}

// run boots device d and returns once its boot is done (what runs keeps running).
func (r *Runtime) run(ctx context.Context, d metal.Device, current func() (metal.Device, bool)) error {
	rendered, err := render(d.Userdata, instanceData{"local_hostname": d.Hostname, "instance_id": d.ID})
	if err != nil {
		return err
	}
	ud, err := parseUserData(rendered)
	if err != nil {
		return err
	}
	cfg, err := parseKubeadmConfig(ud.files[ud.configPath])
	if err != nil {
		return fmt.Errorf("%s: %w", ud.configPath, err)
	}
	if ud.kubeadm == "init" {
		return r.kubeadmInit(ctx, d, current, ud, cfg)
	}
	return r.kubeadmJoin(ctx, d, cfg)
}

// cleanUp stops the control plane a device runs, if any, and forgets the device.
func (r *Runtime) cleanUp(log logr.Logger, id string) {
	r.mu.Lock()
	for endpoint, cp := range r.controlPlanes {
		if cp.deviceID == id {
			delete(r.controlPlanes, endpoint)
		}
	}
	r.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := controlplane.Delete(ctx, r.deviceDir(id)); err != nil {
		log.Error(err, "Stopping the device's control plane")
	} else {
		log.Info("Device shut down")
	}
	r.mu.Lock()
	delete(r.devices, id)
	r.mu.Unlock()
}

func (r *Runtime) deviceDir(id string) string { return filepath.Join(r.opts.Dir, id) }

// wait sleeps retryInterval, or returns the context's error.
func wait(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(retryInterval):
		return nil
	}
}
