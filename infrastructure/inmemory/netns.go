package inmemory

import (
	"context"
	"fmt"
	"net"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// The provider process runs in a network namespace of its own, holding only a loopback
// interface: Cluster API's in-memory API server listens on every address (":port") of its
// namespace, and there nothing but this process can reach it. The process reaches the management
// cluster, and serves the workload clusters' endpoints on 127.0.0.1 of the host, through the
// host's network namespace, which its parent hands it as an open file: a socket belongs for its
// whole life to the namespace of the thread that created it, so creating one on a thread that
// has switched to the host's namespace (and back) is enough.

// hostNetwork is the network namespace of the host, where the management cluster and the
// workload clusters' clients are.
type hostNetwork struct {
	ns *os.File
}

// do runs f on a thread switched to the host's network namespace: the sockets f creates live
// there. f must not start goroutines that create sockets. If the thread cannot switch back, it
// stays locked and ends with this goroutine (Go then discards it), so no other goroutine ever
// runs in the wrong namespace.
func (h *hostNetwork) do(f func() error) error {
	runtime.LockOSThread()
	own, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()))
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("opening this thread's network namespace: %w", err)
	}
	defer func() { _ = own.Close() }()
	if err := unix.Setns(int(h.ns.Fd()), unix.CLONE_NEWNET); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("entering the host's network namespace: %w", err)
	}
	ferr := f()
	if err := unix.Setns(int(own.Fd()), unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("returning from the host's network namespace: %w", err) // the thread stays locked, and dies
	}
	runtime.UnlockOSThread()
	return ferr
}

// dial connects to address in the host's network namespace.
func (h *hostNetwork) dial(ctx context.Context, network, address string) (net.Conn, error) {
	var conn net.Conn
	err := h.do(func() error {
		var err error
		conn, err = (&net.Dialer{}).DialContext(ctx, network, address)
		return err
	})
	return conn, err
}

// listen listens on address, such as 127.0.0.1:20000, in the host's network namespace.
func (h *hostNetwork) listen(address string) (net.Listener, error) {
	var l net.Listener
	err := h.do(func() error {
		var err error
		l, err = net.Listen("tcp", address) //nolint:noctx // a listener of the host, as long as the process lives
		return err
	})
	return l, err
}

// loopbackUp brings up the loopback interface of this process's network namespace, which a new
// namespace has down.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("bringing up lo: %w", err)
	}
	defer func() { _ = unix.Close(fd) }()
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return fmt.Errorf("bringing up lo: %w", err)
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("reading the flags of lo: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("bringing up lo: %w", err)
	}
	return nil
}

// ownNetworkNamespace reports whether this process runs in a network namespace other than the
// host's (the one ns is).
func ownNetworkNamespace(ns *os.File) (bool, error) {
	var host, self unix.Stat_t
	if err := unix.Fstat(int(ns.Fd()), &host); err != nil {
		return false, fmt.Errorf("reading the host's network namespace: %w", err)
	}
	if err := unix.Stat("/proc/self/ns/net", &self); err != nil {
		return false, fmt.Errorf("reading this process's network namespace: %w", err)
	}
	return host.Ino != self.Ino || host.Dev != self.Dev, nil
}
