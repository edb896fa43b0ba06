package inmemory

import (
	"fmt"
	"strconv"
)

// Ports of the workload clusters' endpoints. Each provider process takes a block of blockSize
// ports from firstPort on, the first block whose first port is free on the host (another
// provider, of another management cluster on this machine, may hold one), or, when it restarts,
// the block its clusters' endpoints are in.
const (
	firstPort = 20000
	blockSize = 1000
	blocks    = 10
)

// choosePorts returns the range of ports the in-memory server allocates endpoints from: the
// block of the existing endpoints (by listener name), else the first block free on the host.
func choosePorts(existing map[string]int32, host *hostNetwork) (minPort, maxPort int32, err error) {
	lowest := int32(0)
	for _, port := range existing {
		if lowest == 0 || port < lowest {
			lowest = port
		}
	}
	if lowest != 0 {
		minPort = firstPort + (lowest-firstPort)/blockSize*blockSize
		return minPort, minPort + blockSize - 1, nil
	}
	for b := int32(0); b < blocks; b++ {
		minPort = firstPort + b*blockSize
		l, err := host.listen("127.0.0.1:" + strconv.Itoa(int(minPort)))
		if err != nil {
			continue
		}
		if err := l.Close(); err != nil {
			return 0, 0, fmt.Errorf("probing port %d: %w", minPort, err)
		}
		return minPort, minPort + blockSize - 1, nil
	}
	return 0, 0, fmt.Errorf("no block of %d ports from %d to %d has its first port free on 127.0.0.1", blockSize, firstPort, firstPort+blocks*blockSize-1)
}
