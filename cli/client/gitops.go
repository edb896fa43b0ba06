package client

import (
	"context"
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	gitopsrepo "github.com/flotilla-dev/flotilla/cluster/gitops"
	"github.com/flotilla-dev/flotilla/cluster/spec"
	"github.com/flotilla-dev/flotilla/config"
)

// commitClusterSpec commits the spec s to the Git repository of the GitOpsConfig that its
// Cluster's spec.gitOpsRef names, at its place in the layout of management cluster management
// (clusters/<management>/cluster.yaml for the management cluster itself,
// clusters/<management>/workload-clusters/<name>/cluster.yaml for a workload cluster). It does
// nothing for a Cluster without gitOpsRef, and commits nothing when the repository already
// holds the spec, so phases that call it can be re-run.
//
// kc is the management cluster. The GitOpsConfig is read there; when it is missing and the
// spec file holds it, it is applied there first (this is how a management cluster gets its
// own), with the namespace's GitOps applier (config.InstallGitOpsApplier). management may be empty (a user who cannot list the management Cluster): it is then
// read from the Cluster in kc, where the webhook defaulted it. The CLI pushes with the user's
// own Git credentials (gitops.AuthFromEnv); the management cluster pulls with those of the
// GitOpsConfig's Secret.
func (c *Client) commitClusterSpec(ctx context.Context, kc ctrlclient.Client, s *spec.Spec, management string) error {
	if s.Cluster.Spec.GitOpsRef == nil {
		return nil
	}
	config, err := ensureGitOpsConfig(ctx, kc, s)
	if err != nil {
		return err
	}
	if management == "" {
		live := &flotillav1.Cluster{}
		if err := kc.Get(ctx, ctrlclient.ObjectKeyFromObject(s.Cluster), live); err != nil {
			return fmt.Errorf("reading cluster %q to find its management cluster: %w", s.Cluster.Name, err)
		}
		if management = live.Spec.ManagementCluster.Name; management == "" {
			return fmt.Errorf("cluster %q names no management cluster (spec.managementCluster.name), so its place in Git is not known: set it in %s",
				s.Cluster.Name, s.File)
		}
	}
	data, err := renderClusterSpec(s, management, config)
	if err != nil {
		return err
	}
	repo, err := gitopsRepository(config)
	if err != nil {
		return err
	}
	res, err := repo.PutCluster(ctx, management, s.Cluster.Name, data)
	if err != nil {
		return fmt.Errorf("committing the spec of cluster %q to Git: %w (the CLI pushes with your Git credentials: %s and %s for HTTPS, your SSH agent for SSH)",
			s.Cluster.Name, err, gitopsrepo.UsernameEnv, gitopsrepo.PasswordEnv)
	}
	path := gitopsrepo.SpecPath(management, s.Cluster.Name)
	if res.Changed {
		fmt.Fprintf(c.Out, "Committed the spec of cluster %q to %s as %s (commit %.7s)\n", s.Cluster.Name, repo, path, res.Commit)
	} else {
		fmt.Fprintf(c.Out, "%s already holds the spec of cluster %q at %s\n", repo, s.Cluster.Name, path)
	}
	return nil
}

// removeClusterSpec removes the directory of workload cluster fc from the Git repository of its
// GitOpsConfig, in a commit, so the management cluster does not apply it again. It does nothing
// for a Cluster without gitOpsRef; a GitOpsConfig that is gone leaves nothing to remove from,
// which is said and not an error.
func (c *Client) removeClusterSpec(ctx context.Context, kc ctrlclient.Client, fc *flotillav1.Cluster) error {
	ref := fc.Spec.GitOpsRef
	if ref == nil {
		return nil
	}
	config := &flotillav1.GitOpsConfig{}
	err := kc.Get(ctx, ctrlclient.ObjectKey{Namespace: fc.Namespace, Name: ref.Name}, config)
	if apierrors.IsNotFound(err) {
		fmt.Fprintf(c.Out, "GitOpsConfig %q no longer exists in namespace %q: cluster %q's spec is not removed from Git\n", ref.Name, fc.Namespace, fc.Name)
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading GitOpsConfig %q of cluster %q: %w", ref.Name, fc.Name, err)
	}
	repo, err := gitopsRepository(config)
	if err != nil {
		return err
	}
	res, err := repo.RemoveCluster(ctx, fc.Spec.ManagementCluster.Name, fc.Name)
	if err != nil {
		return fmt.Errorf("removing the spec of cluster %q from Git before deleting it: %w (the CLI pushes with your Git credentials: %s and %s for HTTPS, your SSH agent for SSH)",
			fc.Name, err, gitopsrepo.UsernameEnv, gitopsrepo.PasswordEnv)
	}
	if res.Changed {
		fmt.Fprintf(c.Out, "Removed cluster %q from %s (commit %.7s)\n", fc.Name, repo, res.Commit)
	}
	return nil
}

// ensureGitOpsConfig returns the GitOpsConfig the spec's Cluster names, from the management
// cluster; when the management cluster does not have it, the spec file's is applied there. A
// spec file whose GitOpsConfig differs from the management cluster's is refused: one file must
// not redirect the specs of every cluster.
func ensureGitOpsConfig(ctx context.Context, kc ctrlclient.Client, s *spec.Spec) (*flotillav1.GitOpsConfig, error) {
	name := s.Cluster.Spec.GitOpsRef.Name
	live := &flotillav1.GitOpsConfig{}
	err := kc.Get(ctx, ctrlclient.ObjectKey{Namespace: s.Cluster.Namespace, Name: name}, live)
	switch {
	case err == nil:
		if s.GitOpsConfig != nil && !equality.Semantic.DeepEqual(live.Spec, s.GitOpsConfig.Spec) {
			return nil, fmt.Errorf("%s: GitOpsConfig %q differs from the management cluster's (repository %s, branch %s): make them match, or leave the GitOpsConfig out of the file",
				s.File, name, live.Spec.Repository, live.Spec.Branch)
		}
		return live, nil
	case apierrors.IsNotFound(err) && s.GitOpsConfig != nil:
		// The repository's specs are applied as the namespace's GitOps applier, which may
		// create clusters there and nothing more.
		if err := config.InstallGitOpsApplier(ctx, kc, s.Cluster.Namespace); err != nil {
			return nil, fmt.Errorf("letting GitOpsConfig %q apply specs in namespace %q: %w", name, s.Cluster.Namespace, err)
		}
		if err := applyObjects(ctx, kc, []ctrlclient.Object{s.GitOpsConfig}); err != nil {
			return nil, err
		}
		return s.GitOpsConfig, nil
	case apierrors.IsNotFound(err):
		return nil, fmt.Errorf("%s: spec.gitOpsRef names GitOpsConfig %q, which namespace %q of the management cluster does not have: add the GitOpsConfig to the file, or name the management cluster's",
			s.File, name, s.Cluster.Namespace)
	default:
		return nil, fmt.Errorf("reading GitOpsConfig %q: %w", name, err)
	}
}

// renderClusterSpec renders the spec file committed for s: the Cluster (managed by
// management), its provider's configs, and the GitOpsConfig for a management cluster (its spec
// holds it, so the file can recreate the cluster).
func renderClusterSpec(s *spec.Spec, management string, config *flotillav1.GitOpsConfig) ([]byte, error) {
	cluster := s.Cluster.DeepCopy()
	cluster.Spec.ManagementCluster.Name = management
	objs := []ctrlclient.Object{cluster}
	for _, obj := range s.Objects {
		if obj != s.Cluster {
			objs = append(objs, obj)
		}
	}
	if s.GitOpsConfig != nil {
		objs = append(objs, s.GitOpsConfig)
	}
	role := fmt.Sprintf("workload cluster %s, managed by management cluster %s", s.Cluster.Name, management)
	if s.Cluster.Spec.Management {
		role = "management cluster " + s.Cluster.Name
	}
	header := fmt.Sprintf("Cluster spec of %s, committed by flotilla.\n"+
		"Management cluster %s applies what is committed here every %s (GitOpsConfig %s/%s):\n"+
		"change a worker count, commit, and the cluster scales.",
		role, management, config.Spec.Interval.Duration, config.Namespace, config.Name)
	return gitopsrepo.RenderSpec(header, objs)
}

// gitopsRepository is the branch of config's repository, reached with the user's credentials
// within config's timeout.
func gitopsRepository(config *flotillav1.GitOpsConfig) (gitopsrepo.Repository, error) {
	auth, err := gitopsrepo.AuthFromEnv(config.Spec.Repository, os.Getenv)
	if err != nil {
		return gitopsrepo.Repository{}, fmt.Errorf("GitOpsConfig %s/%s: spec.repository: %w", config.Namespace, config.Name, err)
	}
	return gitopsrepo.Repository{
		URL:     config.Spec.Repository,
		Branch:  config.Spec.Branch,
		Auth:    auth,
		Timeout: config.Spec.Timeout.Duration,
	}, nil
}
