package spec

import (
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	gitopsrepo "github.com/flotilla-dev/flotilla/cluster/gitops"
)

// FuzzParse feeds arbitrary bytes to the spec file decoder and validator (the seeds, in
// testdata/fuzz/FuzzParse, are valid and invalid specs of each provider). Parse must never
// panic; what it refuses is an *Error whose every problem says something; what it accepts has
// its Cluster, and written out again as Git holds it (gitops.RenderSpec), parses to the same
// objects.
func FuzzParse(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse("fuzz.yaml", data)
		if err != nil {
			var specErr *Error
			if !errors.As(err, &specErr) {
				t.Fatalf("Parse returned %T, not *Error: %v", err, err)
			}
			if len(specErr.Problems) == 0 {
				t.Fatalf("an *Error without problems")
			}
			for _, p := range specErr.Problems {
				if strings.TrimSpace(p.Message) == "" {
					t.Fatalf("a problem without a message: %+v", p)
				}
			}
			return
		}
		if s.Cluster == nil || len(s.Objects) == 0 {
			t.Fatalf("an accepted spec without its Cluster or objects: %+v", s)
		}
		objs := s.Objects
		if s.GitOpsConfig != nil {
			objs = append([]ctrlclient.Object{s.GitOpsConfig}, objs...)
		}
		rendered, err := gitopsrepo.RenderSpec("written again", objs)
		if err != nil {
			t.Fatalf("rendering an accepted spec: %v", err)
		}
		again, err := Parse("again.yaml", rendered)
		if err != nil {
			t.Fatalf("an accepted spec, written again, is refused: %v\n%s", err, rendered)
		}
		if !equality.Semantic.DeepEqual(s.Objects, again.Objects) || !equality.Semantic.DeepEqual(s.GitOpsConfig, again.GitOpsConfig) {
			t.Fatalf("an accepted spec, written again, parses to other objects:\n%s", rendered)
		}
	})
}
