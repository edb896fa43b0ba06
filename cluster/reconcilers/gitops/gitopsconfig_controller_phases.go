package gitops

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/transport"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/annotations"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	gitopsrepo "github.com/flotilla-dev/flotilla/cluster/gitops"
	"github.com/flotilla-dev/flotilla/cluster/spec"
	"github.com/flotilla-dev/flotilla/config"
)

// parsedSpec is a spec file of the repository that this GitOpsConfig applies.
type parsedSpec struct {
	file gitopsrepo.SpecFile
	spec *spec.Spec
}

// findManagement chooses the management cluster whose directory to sync: the one Cluster of
// the API server with spec.management true that manages itself (when there are several, the
// one in the GitOpsConfig's namespace). It sets s.paused when that cluster must not be
// touched: paused, being deleted, or being moved (clusterctl pauses its Cluster API Cluster,
// and the Flotilla Cluster reconciler then marks it capi-paused).
func (r *Reconciler) findManagement(ctx context.Context, s *scope) error {
	clusters := &flotillav1.ClusterList{}
	if err := r.Client.List(ctx, clusters); err != nil {
		return fmt.Errorf("listing Clusters to find the management cluster: %w", err)
	}
	var all, here []*flotillav1.Cluster
	for i := range clusters.Items {
		c := &clusters.Items[i]
		if c.Spec.Management && c.Spec.ManagementCluster.Name == c.Name {
			all = append(all, c)
			if c.Namespace == s.config.Namespace {
				here = append(here, c)
			}
		}
	}
	candidates := all
	if len(all) > 1 {
		candidates = here
	}
	switch {
	case len(all) == 0:
		s.waiting = "this API server holds no management Cluster (spec.management: true, managing itself) yet; " +
			"the sync starts once it does"
		return nil
	case len(candidates) != 1:
		var names []string
		for _, c := range all {
			names = append(names, klog.KObj(c).String())
		}
		s.waiting = fmt.Sprintf("this API server holds several management Clusters (%s) and not exactly one in namespace %s; "+
			"keep one management Cluster per API server", strings.Join(names, ", "), s.config.Namespace)
		return nil
	}
	m := candidates[0]
	s.management = m
	_, holding := m.Annotations[flotillav1.CAPIPausedAnnotation]
	switch {
	case !m.DeletionTimestamp.IsZero():
		s.paused = fmt.Sprintf("management cluster %s is being deleted", m.Name)
	case annotations.HasPaused(m):
		s.paused = fmt.Sprintf("management cluster %s is paused (%s)", m.Name, clusterv1.PausedAnnotation)
	case holding:
		s.paused = fmt.Sprintf("management cluster %s is being moved (its Cluster API Cluster is paused)", m.Name)
	default:
		capi := &clusterv1.Cluster{}
		err := r.Client.Get(ctx, ctrlclient.ObjectKeyFromObject(m), capi)
		switch {
		case err == nil && ptr.Deref(capi.Spec.Paused, false):
			s.paused = fmt.Sprintf("management cluster %s is being moved or upgraded (its Cluster API Cluster is paused)", m.Name)
		case err != nil && !apierrors.IsNotFound(err):
			return fmt.Errorf("reading the Cluster API Cluster of management cluster %s: %w", m.Name, err)
		}
	}
	return nil
}

// pull fetches the branch (with the credentials of spec.secretRef, when set).
func (r *Reconciler) pull(ctx context.Context, s *scope) error {
	cfg := s.config
	s.repo = gitopsrepo.Repository{URL: cfg.Spec.Repository, Branch: cfg.Spec.Branch, Timeout: cfg.Spec.Timeout.Duration}
	if ref := cfg.Spec.SecretRef; ref != nil {
		auth, err := r.credentials(ctx, ref.Name, cfg.Spec.Repository)
		if err != nil {
			return err
		}
		s.repo.Auth = auth
	}
	snapshot, err := s.repo.Pull(ctx, filepath.Join(r.CacheDir, s.management.Name, cfg.Namespace, cfg.Name))
	if err != nil {
		return err
	}
	s.snapshot = snapshot
	return nil
}

// credentials reads the credentials Secret from flotilla-system. Errors name the Secret and
// the missing key, never a value.
func (r *Reconciler) credentials(ctx context.Context, name, url string) (transport.AuthMethod, error) {
	secret := &corev1.Secret{}
	key := ctrlclient.ObjectKey{Namespace: flotillav1.GitOpsCredentialsNamespace, Name: name}
	if err := r.APIReader.Get(ctx, key, secret); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("spec.secretRef.name: Secret %s not found; create it in %s, or remove secretRef for a repository that needs no credentials",
				key, flotillav1.GitOpsCredentialsNamespace)
		}
		return nil, fmt.Errorf("reading the credentials Secret %s: %w", key, err)
	}
	auth, err := gitopsrepo.AuthFromSecret(url, secret.Data)
	if errors.Is(err, gitopsrepo.ErrCredentialsOverHTTP) {
		return nil, fmt.Errorf("spec.repository: %w, or remove spec.secretRef", err)
	}
	if err != nil {
		return nil, fmt.Errorf("spec.secretRef.name: Secret %s: %w", key, err)
	}
	return auth, nil
}

// load parses the management cluster's spec files of the snapshot and keeps this
// GitOpsConfig's: those of its namespace whose Cluster names it in spec.gitOpsRef. A commit with
// an invalid spec is applied not at all: every problem is reported, each naming the file, the
// line where known, and the field.
func (r *Reconciler) load(ctx context.Context, s *scope) error {
	files, err := s.snapshot.Specs(s.management.Name)
	if err != nil {
		return err
	}
	var problems []error
	for _, f := range files {
		parsed, ours, err := checkSpec(s.config, s.management.Name, f)
		switch {
		case err != nil:
			problems = append(problems, err)
		case ours:
			s.specs = append(s.specs, parsedSpec{file: f, spec: parsed})
		default:
			ctrl.LoggerFrom(ctx).V(1).Info("Skipping a spec of another GitOpsConfig", "file", f.Path)
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("commit %s holds invalid specs, so none is applied: %w", short(s.snapshot.Commit()), errors.Join(problems...))
	}
	return nil
}

// checkSpec parses a spec file and checks it against the layout: the Cluster is the one its
// directory names, a management cluster's spec is at the top and a workload cluster's under
// workload-clusters, and a workload cluster is managed by the management cluster whose
// directory it is in (spec.managementCluster.name is filled in when left out). ours is false
// for the spec of another namespace or another GitOpsConfig.
func checkSpec(config *flotillav1.GitOpsConfig, management string, f gitopsrepo.SpecFile) (_ *spec.Spec, ours bool, _ error) {
	parsed, err := spec.Parse(f.Path, f.Data)
	if err != nil {
		return nil, false, err
	}
	c := parsed.Cluster
	problem := func(field, format string, args ...any) error {
		return fmt.Errorf("%s: Cluster %q: %s: %s", f.Path, c.Name, field, fmt.Sprintf(format, args...))
	}
	ref := c.Spec.GitOpsRef
	switch {
	case ref == nil:
		return nil, false, problem("spec.gitOpsRef", "missing; a spec in the repository names the GitOpsConfig that applies it: set {kind: %s, name: %s}",
			flotillav1.GitOpsConfigKind, config.Name)
	case c.Namespace != config.Namespace || ref.Name != config.Name:
		return nil, false, nil
	case c.Name != f.Cluster:
		return nil, false, problem("metadata.name", "the file is in the directory of cluster %q; rename the directory or fix the name", f.Cluster)
	case f.Management && !c.Spec.Management:
		return nil, false, problem("spec.management", "false, but %s is the management cluster's spec; a workload cluster's spec goes to %s",
			f.Path, gitopsrepo.SpecPath(management, "<name>"))
	case !f.Management && c.Spec.Management:
		return nil, false, problem("spec.management", "true, but %s is a workload cluster's spec; a workload cluster cannot become a management cluster", f.Path)
	case !f.Management && c.Spec.ManagementCluster.Name != "" && c.Spec.ManagementCluster.Name != management:
		return nil, false, problem("spec.managementCluster.name", "%q, but the file is in the directory of management cluster %q",
			c.Spec.ManagementCluster.Name, management)
	}
	c.Spec.ManagementCluster.Name = management
	return parsed, true, nil
}

// applyChanged applies the specs whose file changed since the last applied commit (all of them
// when there is none, or when it is not in the repository any more): the provider's configs,
// then the Cluster, server-side, as FieldOwner, acting as the applier of the GitOpsConfig's
// namespace (ClientAs). Specs that did not change are left alone, so a change made with kubectl
// stays until the file in Git changes.
func (r *Reconciler) applyChanged(ctx context.Context, s *scope) error {
	since := s.statusBase.LastAppliedCommit
	applier, err := r.ClientAs(s.config.Namespace)
	if err != nil {
		return err
	}
	for _, p := range s.specs {
		if s.snapshot.Unchanged(since, p.file) {
			continue
		}
		for _, obj := range p.spec.Objects {
			if err := apply(ctx, applier, obj); err != nil {
				return fmt.Errorf("%s: %w", p.file.Path, explainForbidden(err, s.config.Namespace))
			}
		}
		s.applied = append(s.applied, klog.KObj(p.spec.Cluster).String())
		ctrl.LoggerFrom(ctx).Info("Applied a cluster spec from Git", "file", p.file.Path,
			"cluster", klog.KObj(p.spec.Cluster), "commit", short(s.snapshot.Commit()))
	}
	s.synced = true
	return nil
}

// explainForbidden adds to a refusal of the applier of namespace what the applier is and how an
// admin lets it apply a repository's specs.
func explainForbidden(err error, namespace string) error {
	if !apierrors.IsForbidden(err) {
		return err
	}
	sa := flotillav1.GitOpsApplierServiceAccount
	binding := config.ClusterCreatorBinding(namespace, rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: namespace, Name: sa})
	return fmt.Errorf("%w; specs are applied as %s, with what it is allowed in namespace %s: an admin who trusts the repository's writers "+
		"to create clusters there binds it the cluster creator role (kubectl create rolebinding %s --namespace %s --clusterrole %s --serviceaccount %s:%s)",
		err, ApplierUser(namespace), namespace, binding.Name, namespace, binding.RoleRef.Name, namespace, sa)
}

// apply server-side applies obj with c as FieldOwner, taking over fields the CLI or kubectl
// set.
func apply(ctx context.Context, c ctrlclient.Client, obj ctrlclient.Object) error {
	kind := obj.GetObjectKind().GroupVersionKind().Kind
	raw, err := json.Marshal(obj)
	if err != nil {
		return fmt.Errorf("encoding %s %s: %w", kind, klog.KObj(obj), err)
	}
	u := &unstructured.Unstructured{}
	if err := json.Unmarshal(raw, &u.Object); err != nil {
		return fmt.Errorf("decoding %s %s: %w", kind, klog.KObj(obj), err)
	}
	unstructured.RemoveNestedField(u.Object, "status")
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	err = c.Apply(ctx, ctrlclient.ApplyConfigurationFromUnstructured(u), ctrlclient.FieldOwner(FieldOwner), ctrlclient.ForceOwnership)
	if err != nil {
		return fmt.Errorf("applying %s %s: %w", kind, klog.KObj(obj), err)
	}
	return nil
}

// clusterNames lists the namespace/name of the Clusters of specs, sorted.
func clusterNames(specs []parsedSpec) []string {
	names := make([]string, 0, len(specs))
	for _, p := range specs {
		names = append(names, klog.KObj(p.spec.Cluster).String())
	}
	slices.Sort(names)
	return names
}

// short abbreviates a commit hash as git does.
func short(commit string) string {
	if len(commit) > 7 {
		return commit[:7]
	}
	return commit
}
