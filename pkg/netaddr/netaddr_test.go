package netaddr_test

import (
	"testing"

	. "github.com/onsi/gomega"

	"github.com/flotilla-dev/flotilla/pkg/netaddr"
)

func TestOnlyAddressesOfThisMachineAreLoopback(t *testing.T) {
	for _, tc := range []struct {
		addr string
		want bool
	}{
		{"127.0.0.1:5001", true},
		{"127.1.2.3", true},
		{"localhost:5001", true},
		{"localhost", true},
		{"[::1]:5001", true},
		{"::1", true},
		{"0.0.0.0:5001", false},
		{":5001", false},
		{"[::]:5001", false},
		{"10.0.0.1:5001", false},
		{"registry.example.com:443", false},
		{"localhost.example.com", false},
		{"", false},
	} {
		t.Run(tc.addr, func(t *testing.T) {
			NewWithT(t).Expect(netaddr.IsLoopback(tc.addr)).To(Equal(tc.want))
		})
	}
}
