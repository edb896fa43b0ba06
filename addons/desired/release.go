package desired

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/addons/engine"
	"github.com/flotilla-dev/flotilla/addons/values"
	addonsv1 "github.com/flotilla-dev/flotilla/api/addons/v1alpha1"
	"github.com/flotilla-dev/flotilla/pkg/helm"
	"github.com/flotilla-dev/flotilla/pkg/postrender"
	"github.com/flotilla-dev/flotilla/pkg/registryconn"
	"github.com/flotilla-dev/flotilla/pkg/registrymirror"
)

// DefaultReleaseNamespace is the namespace of a release whose spec names none.
const DefaultReleaseNamespace = "default"

// InputError is a problem with what the release is made of (values, credentials) that the user
// fixes.
type InputError struct {
	// Reason is the condition reason to report it with.
	Reason string
	// Err says what is wrong.
	Err error
}

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

// ReleaseNamespace is the namespace hrp's release goes to: spec.namespace, else
// DefaultReleaseNamespace.
func ReleaseNamespace(hrp *addonsv1.HelmReleaseProxy) string {
	if hrp.Spec.Namespace == "" {
		return DefaultReleaseNamespace
	}
	return hrp.Spec.Namespace
}

// Release builds the release hrp's spec asks for, with the hash of its merged values and
// post-render (as the Helm engine records it, helm.InputsHash): valuesFrom, then spec.values, then with
// tenantValues the tenants' (values.FromTenants), read with registry Secrets through c.
// Its input errors (missing values or credentials) are *InputError and say what to fix.
func Release(ctx context.Context, c ctrlclient.Reader, hrp *addonsv1.HelmReleaseProxy) (engine.Release, string, error) {
	from, err := values.FromSources(ctx, c, hrp.Namespace, hrp.Spec.ValuesFrom)
	if err != nil {
		return engine.Release{}, "", &InputError{Reason: addonsv1.ValuesErrorReason, Err: err}
	}
	own, err := values.Parse(hrp.Spec.Values)
	if err != nil {
		return engine.Release{}, "", &InputError{Reason: addonsv1.ValuesErrorReason, Err: fmt.Errorf("spec.values is not a YAML mapping: %w", err)}
	}
	var tenant map[string]any
	if hrp.Spec.TenantValues {
		if tenant, err = values.FromTenants(ctx, c, hrp.Namespace, hrp.Labels[addonsv1.HelmChartProxyNameLabel], hrp.Spec.ClusterName); err != nil {
			return engine.Release{}, "", &InputError{Reason: addonsv1.ValuesErrorReason, Err: err}
		}
	}
	merged := values.Merge(from, own, tenant)
	registry, err := registry(ctx, c, hrp)
	if err != nil {
		return engine.Release{}, "", &InputError{Reason: addonsv1.RegistryErrorReason, Err: err}
	}
	o := hrp.Spec.Options
	var timeout time.Duration // the engine's default, helm.DefaultTimeout, when unset
	if o.Timeout != nil {
		timeout = o.Timeout.Duration
	}
	rel := engine.Release{
		Name:            hrp.Spec.ReleaseName,
		Namespace:       ReleaseNamespace(hrp),
		Chart:           engine.Chart{RepoURL: hrp.Spec.RepoURL, Name: hrp.Spec.ChartName, Version: hrp.Spec.Version, Digest: hrp.Spec.ChartDigest},
		Registry:        registry,
		Values:          merged,
		CreateNamespace: ptr.Deref(o.CreateNamespace, true),
		Wait:            o.Wait || o.Atomic,
		Atomic:          o.Atomic,
		SkipCRDs:        o.SkipCRDs,
		Timeout:         timeout,
		MaxHistory:      int(o.MaxHistory), // helm.DefaultMaxHistory when 0
		Labels: map[string]string{
			addonsv1.HelmChartProxyNameLabel: hrp.Labels[addonsv1.HelmChartProxyNameLabel],
			"addons.flotilla.dev/namespace":  hrp.Namespace,
		},
		PostRender: postrender.Spec{PostRender: hrp.Spec.PostRender},
	}
	hash, err := helm.InputsHash(rel)
	if err != nil {
		return engine.Release{}, "", err
	}
	return rel, hash, nil
}

// registry reads the repository's credentials and CA from the Secrets spec.registry names, and
// the mirror the chart is pulled through (spec.registryMirror, else the management cluster's).
func registry(ctx context.Context, c ctrlclient.Reader, hrp *addonsv1.HelmReleaseProxy) (registryconn.Config, error) {
	spec := ptr.Deref(hrp.Spec.Registry, addonsv1.RegistryOptions{})
	reg := registryconn.Config{InsecureSkipTLSVerify: spec.InsecureSkipTLSVerify, PlainHTTP: spec.PlainHTTP}
	if ref := spec.CredentialsSecretRef; ref != nil {
		secret := &corev1.Secret{}
		if err := c.Get(ctx, ctrlclient.ObjectKey{Namespace: hrp.Namespace, Name: ref.Name}, secret); err != nil {
			return registryconn.Config{}, fmt.Errorf("reading registry credentials Secret %s: %w", ref.Name, err)
		}
		reg.Username, reg.Password = string(secret.Data["username"]), string(secret.Data["password"])
		if reg.Username == "" || reg.Password == "" {
			return registryconn.Config{}, fmt.Errorf("registry credentials Secret %s needs the keys username and password", ref.Name)
		}
	}
	if ref := spec.CASecretRef; ref != nil {
		secret := &corev1.Secret{}
		if err := c.Get(ctx, ctrlclient.ObjectKey{Namespace: hrp.Namespace, Name: ref.Name}, secret); err != nil {
			return registryconn.Config{}, fmt.Errorf("reading registry CA Secret %s: %w", ref.Name, err)
		}
		if reg.CAData = secret.Data["ca.crt"]; len(reg.CAData) == 0 {
			return registryconn.Config{}, fmt.Errorf("registry CA Secret %s has no key ca.crt", ref.Name)
		}
	}
	mirror, err := registrymirror.Of(ctx, c, mirrorSettings(hrp))
	if err != nil {
		return registryconn.Config{}, err
	}
	reg.Mirror = mirror
	return reg, nil
}

// mirrorSettings is hrp's own registry mirror, nil when it names none (the management
// cluster's applies then).
func mirrorSettings(hrp *addonsv1.HelmReleaseProxy) *registrymirror.Settings {
	m := hrp.Spec.RegistryMirror
	if m == nil {
		return nil
	}
	s := &registrymirror.Settings{Field: "spec.registryMirror", Registry: m.Registry, Namespace: hrp.Namespace,
		PlainHTTP: m.PlainHTTP, InsecureSkipTLSVerify: m.InsecureSkipTLSVerify}
	if m.CredentialsSecretRef != nil {
		s.CredentialsSecret = m.CredentialsSecretRef.Name
	}
	if m.CASecretRef != nil {
		s.CASecret = m.CASecretRef.Name
	}
	return s
}
