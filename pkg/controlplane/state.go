package controlplane

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/flotilla-dev/flotilla/pkg/atomicfile"
	"github.com/flotilla-dev/flotilla/pkg/process"
)

// state is what a control plane remembers in Dir/state.json: the choices made once and reused so
// that a restart keeps the same endpoint and the same etcd.
type state struct {
	// Host and APIServerPort are kube-apiserver's endpoint.
	Host          string `json:"host"`
	APIServerPort int32  `json:"apiServerPort"`
	// EtcdClientPort and EtcdPeerPort are etcd's ports on 127.0.0.1.
	EtcdClientPort int32 `json:"etcdClientPort"`
	EtcdPeerPort   int32 `json:"etcdPeerPort"`
	// KubernetesVersion is the version of the binaries last started.
	KubernetesVersion string `json:"kubernetesVersion,omitempty"`
	// NodeNetwork is the node network of the cluster's real nodes, once it has one.
	NodeNetwork string `json:"nodeNetwork,omitempty"`
	// ManagedBy is Config.ManagedBy as last given.
	ManagedBy string `json:"managedBy,omitempty"`
}

func loadState(path string) (state, error) {
	var st state
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return st, fmt.Errorf("reading control plane state: %w", err)
	}
	if err := json.Unmarshal(data, &st); err != nil {
		return st, fmt.Errorf("parsing %s: %w; fix or remove the file (ports are chosen again)", path, err)
	}
	return st, nil
}

func saveState(path string, st state) error {
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding control plane state: %w", err)
	}
	return atomicfile.Write(path, append(data, '\n'))
}

// Ports are picked at random below the kernel's ephemeral range, so that the port of a stopped
// server is not handed out to an outgoing connection meanwhile, and remembered in this process so
// that two control planes set up at the same time do not pick the same one.
var reserved = struct {
	sync.Mutex
	ports map[int32]bool
}{ports: map[int32]bool{}}

const lowestPort = 10000

// PickPort returns a TCP port that is free on host and was not handed out by this process
// before, below the kernel's ephemeral range (where outgoing connections take their ports) when it
// can. Every port Flotilla chooses for a process it starts comes from here.
func PickPort(host string) (int32, error) {
	high := ephemeralLow()
	reserved.Lock()
	defer reserved.Unlock()
	for range 200 {
		port := int32(lowestPort + rand.IntN(high-lowestPort)) //nolint:gosec // spreads ports, secures nothing
		if reserved.ports[port] || !portFree(host, port) {
			continue
		}
		reserved.ports[port] = true
		return port, nil
	}
	// Crowded: let the kernel choose.
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return 0, fmt.Errorf("finding a free port on %s: %w", host, err)
	}
	defer func() { _ = l.Close() }()            // only reserved the port
	port := int32(l.Addr().(*net.TCPAddr).Port) //nolint:gosec // a TCP port fits
	reserved.ports[port] = true
	return port, nil
}

// portFree reports whether a server could listen on host:port now.
func portFree(host string, port int32) bool {
	return process.PortFree(hostPort(host, port))
}

// ephemeralLow returns the first port of the kernel's ephemeral range (32768 by default).
func ephemeralLow() int {
	data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err == nil {
		if fields := strings.Fields(string(data)); len(fields) == 2 {
			if low, err := strconv.Atoi(fields[0]); err == nil && low > lowestPort+1000 {
				return low
			}
		}
	}
	return 32768
}
