package spec

import (
	"bytes"
	"fmt"
	"strings"
	"text/template"

	clustervalidation "github.com/flotilla-dev/flotilla/cluster/validation"
	"github.com/flotilla-dev/flotilla/infrastructure/providers"
	"github.com/flotilla-dev/flotilla/pkg/binaries"
	"github.com/flotilla-dev/flotilla/pkg/kubeversion"
)

// DefaultWorkerGroup is the name of the worker node group a generated spec has.
const DefaultWorkerGroup = "md-0"

// GenerateOptions are the inputs of Generate.
type GenerateOptions struct {
	// Name is the cluster's name, a DNS label.
	Name string
	// Provider is the infrastructure provider, one of Providers().
	Provider string
	// Management sets spec.management.
	Management bool
	// KubernetesVersion is the minor version ("1.36" or "v1.36"); empty means the newest
	// supported one.
	KubernetesVersion string
	// Workers is the number of workers of the first worker node group.
	Workers int32
	// RealWorkers, when more than 0, adds a worker node group of that many real nodes (local
	// provider only).
	RealWorkers int32
}

// templateData is what a provider's template renders.
type templateData struct {
	GenerateOptions
	// Command is the command line that reproduces the output.
	Command string
	// Supported lists the supported minor versions: "1.36, 1.35".
	Supported string
	// WorkerGroup is the worker node group's name.
	WorkerGroup string
}

// Generate returns a complete cluster spec for the provider, as commented multi-document YAML
// that Parse accepts: the Cluster and the provider's datacenter and machine configs.
func Generate(o GenerateOptions) ([]byte, error) {
	text, ok := templateOf(o.Provider)
	if !ok {
		return nil, fmt.Errorf("unknown provider %q: supported providers are %s", o.Provider, strings.Join(Providers(), ", "))
	}
	if o.Provider == ProviderInMemory && o.Management {
		return nil, fmt.Errorf("--management: a cluster of Cluster API's in-memory provider is a workload cluster; a management cluster is of the %s provider", ProviderLocal)
	}
	if msg := clustervalidation.DNSLabelProblem(o.Name, clustervalidation.MaxClusterNameLength); msg != "" {
		return nil, fmt.Errorf("%q is not a valid cluster name: %s", o.Name, msg)
	}
	if o.Workers < 0 {
		return nil, fmt.Errorf("the number of workers (%d) is negative; use 0 or more", o.Workers)
	}
	if o.RealWorkers < 0 {
		return nil, fmt.Errorf("the number of real workers (%d) is negative; use 0 or more", o.RealWorkers)
	}
	if o.RealWorkers > 0 && o.Provider != ProviderLocal {
		return nil, fmt.Errorf("real workers run on the management cluster's host, with the %s provider only", ProviderLocal)
	}
	if o.KubernetesVersion == "" {
		o.KubernetesVersion = binaries.SupportedMinors()[0]
	}
	full, err := binaries.ResolveMinor(o.KubernetesVersion)
	minor, _ := kubeversion.Minor(full)
	switch {
	case err != nil:
		return nil, fmt.Errorf("--kubernetes-version %q is not supported: use one of %s",
			o.KubernetesVersion, strings.Join(binaries.SupportedMinors(), ", "))
	case strings.Count(o.KubernetesVersion, ".") != 1:
		return nil, fmt.Errorf("--kubernetes-version %q is a full version: use the minor version %q", o.KubernetesVersion, minor)
	}
	o.KubernetesVersion = minor

	data := templateData{
		GenerateOptions: o,
		Command:         generateCommand(o),
		Supported:       strings.Join(binaries.SupportedMinors(), ", "),
		WorkerGroup:     DefaultWorkerGroup,
	}
	tmpl, err := template.New(o.Provider).Option("missingkey=error").Parse(text)
	if err != nil {
		return nil, fmt.Errorf("parsing the %s template: %w", o.Provider, err)
	}
	var out bytes.Buffer
	if err := tmpl.Execute(&out, data); err != nil {
		return nil, fmt.Errorf("rendering the %s template: %w", o.Provider, err)
	}
	// What we print must load; check rather than hand the user a file create rejects.
	if _, err := Parse(o.Name+".yaml", out.Bytes()); err != nil {
		return nil, fmt.Errorf("generated spec does not load (a bug in flotilla): %w", err)
	}
	return out.Bytes(), nil
}

// templateOf returns the `generate clusterconfig` template of a provider of Providers().
func templateOf(provider string) (string, bool) {
	if provider == ProviderInMemory {
		return inMemoryTemplate, true // inmemory.go
	}
	p, ok := providers.Named(provider)
	return p.Template, ok
}

// generateCommand is the command line that produces o.
func generateCommand(o GenerateOptions) string {
	cmd := fmt.Sprintf("flotilla generate clusterconfig %s --provider %s", o.Name, o.Provider)
	if o.Management {
		cmd += " --management=true"
	}
	cmd += fmt.Sprintf(" --kubernetes-version %s --workers %d", o.KubernetesVersion, o.Workers)
	if o.RealWorkers > 0 {
		cmd += fmt.Sprintf(" --real-workers %d", o.RealWorkers)
	}
	return cmd
}
