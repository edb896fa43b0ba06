package spec

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	gitopsrepo "github.com/flotilla-dev/flotilla/cluster/gitops"
)

// MinGitOpsInterval is the shortest pull interval a GitOpsConfig may ask for.
const MinGitOpsInterval = time.Second

// gitOpsConfigKind is the GitOpsConfig a Cluster's spec.gitOpsRef names. It belongs to no
// provider.
var gitOpsConfigKind = kind{
	gvk:       flotillav1.GroupVersion.WithKind(flotillav1.GitOpsConfigKind),
	newObject: func() ctrlclient.Object { return &flotillav1.GitOpsConfig{} },
}

// checkGitOps finds the file's GitOpsConfig, defaults and validates it, and checks
// spec.gitOpsRef against it. A workload cluster's spec may name a GitOpsConfig the file does
// not hold (its management cluster has it); a management cluster's spec holds its own, since
// there is nowhere else to find it when the cluster is created.
func (a *assembler) checkGitOps(c *flotillav1.Cluster, s *Spec) {
	var doc *document
	for _, d := range a.docs {
		if d.kind.gvk != gitOpsConfigKind.gvk {
			continue
		}
		if doc != nil {
			a.p.doc(d, "", "a spec file holds at most one GitOpsConfig, and %s is already one; remove this one", doc.label())
			continue
		}
		doc = d
	}
	path := field.NewPath("spec", "gitOpsRef")
	ref := c.Spec.GitOpsRef
	switch {
	case ref == nil && doc != nil:
		a.p.cluster(path, "missing; the file has GitOpsConfig %q: set gitOpsRef to {kind: %s, name: %s}, or remove the GitOpsConfig",
			doc.obj.GetName(), flotillav1.GitOpsConfigKind, doc.obj.GetName())
	case ref == nil, ref.Kind != flotillav1.GitOpsConfigKind, ref.Name == "":
		// Nothing to resolve, or cluster/validation reports what is wrong with the ref.
	case doc != nil && doc.obj.GetName() != ref.Name:
		a.p.cluster(path.Child("name"), "GitOpsConfig %q not found in %s (the file has %q); fix the name", ref.Name, a.file, doc.obj.GetName())
	case doc == nil && c.Spec.Management:
		a.p.cluster(path, "GitOpsConfig %q not found in %s; a management cluster's spec holds its GitOpsConfig: add it "+
			"(`flotilla generate clusterconfig` prints one, commented out)", ref.Name, a.file)
	}
	if doc == nil {
		return
	}
	config := doc.obj.(*flotillav1.GitOpsConfig)
	config.Status = flotillav1.GitOpsConfigStatus{}
	defaultGitOpsConfig(config)
	a.validateGitOpsConfig(doc, config)
	config.GetObjectKind().SetGroupVersionKind(gitOpsConfigKind.gvk)
	s.GitOpsConfig = config
}

// defaultGitOpsConfig sets what the API server would default: the branch, the interval and the
// timeout.
func defaultGitOpsConfig(config *flotillav1.GitOpsConfig) {
	if config.Spec.Branch == "" {
		config.Spec.Branch = flotillav1.DefaultGitOpsBranch
	}
	if config.Spec.Interval.Duration == 0 {
		interval, _ := time.ParseDuration(flotillav1.DefaultGitOpsInterval)
		config.Spec.Interval = metav1.Duration{Duration: interval}
	}
	if config.Spec.Timeout.Duration == 0 {
		timeout, _ := time.ParseDuration(flotillav1.DefaultGitOpsTimeout)
		config.Spec.Timeout = metav1.Duration{Duration: timeout}
	}
}

// validateGitOpsConfig checks the repository, branch, interval, timeout and Secret name.
func (a *assembler) validateGitOpsConfig(d *document, config *flotillav1.GitOpsConfig) {
	spec := config.Spec
	if spec.Repository == "" {
		a.p.doc(d, "spec.repository", "missing; set a Git URL (https://..., ssh://..., git@host:path) "+
			"or the absolute path of a repository on the management cluster's machine")
	} else if err := gitopsrepo.ValidateURL(spec.Repository); err != nil {
		a.p.doc(d, "spec.repository", "%v", err)
	}
	if err := gitopsrepo.ValidateBranch(spec.Branch); err != nil {
		a.p.doc(d, "spec.branch", "%v", err)
	}
	if spec.Interval.Duration < MinGitOpsInterval {
		a.p.doc(d, "spec.interval", "%s is too short; pull at most once a second, such as 30s or %s",
			spec.Interval.Duration, flotillav1.DefaultGitOpsInterval)
	}
	if spec.Timeout.Duration < 0 {
		a.p.doc(d, "spec.timeout", "%s is negative; use a positive duration such as %s", spec.Timeout.Duration, flotillav1.DefaultGitOpsTimeout)
	}
	if ref := spec.SecretRef; ref != nil {
		if len(validation.IsDNS1123Subdomain(ref.Name)) > 0 {
			a.p.doc(d, "spec.secretRef.name", "%q is not a valid Secret name: use lowercase letters, digits, '-' and '.'", ref.Name)
		}
	}
}
