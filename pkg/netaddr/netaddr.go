package netaddr

import (
	"net"
	"strings"
)

// IsLoopback is true when host (a host, or a host:port such as a listen address) names this
// machine only: "localhost", 127.0.0.0/8 or ::1. An empty host (":5001", which listens on every
// interface), an unspecified address (0.0.0.0, ::) and any other name are not loopback.
func IsLoopback(host string) bool {
	h := host
	if hh, _, err := net.SplitHostPort(host); err == nil {
		h = hh
	}
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(strings.Trim(h, "[]"))
	return ip != nil && ip.IsLoopback()
}
