package validation

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

func TestDNSLabelProblem(t *testing.T) {
	tests := []struct {
		name string
		in   string
		max  int
		want string
	}{
		{name: "a DNS label has no problem", in: "w1", max: 40},
		{name: "a fixable name gets a suggestion", in: "My_Cluster", max: 40, want: `use at most 40 lowercase letters, digits and '-', starting and ending with a letter or digit, such as "my-cluster"`},
		{name: "a name too long gets no suggestion that is as long", in: strings.Repeat("a", 41), max: 40, want: "use at most 40 lowercase letters, digits and '-', starting and ending with a letter or digit"},
		{name: "a name with nothing to keep gets no suggestion", in: "ÿÿ", max: 63, want: "use at most 63 lowercase letters, digits and '-', starting and ending with a letter or digit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(DNSLabelProblem(tt.in, tt.max)).To(Equal(tt.want))
		})
	}
}
