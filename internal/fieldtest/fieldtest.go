// Package fieldtest checks validation errors in tests: which fields a field.ErrorList names, and
// what it says. The tests of cluster/validation and of each provider's rules use it.
package fieldtest

import (
	"github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Check asserts that errs name exactly wantFields and, when there are any, that their text has
// wantText; nil wantFields means no error.
func Check(g gomega.Gomega, errs field.ErrorList, wantFields []string, wantText string) {
	if wantFields == nil {
		g.Expect(errs).To(gomega.BeEmpty())
		return
	}
	g.Expect(Fields(errs)).To(gomega.ConsistOf(wantFields))
	g.Expect(errs.ToAggregate().Error()).To(gomega.ContainSubstring(wantText))
}

// Fields returns the field paths errs name, in order.
func Fields(errs field.ErrorList) []string {
	out := make([]string, 0, len(errs))
	for _, e := range errs {
		out = append(out, e.Field)
	}
	return out
}
