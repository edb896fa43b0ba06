package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"sigs.k8s.io/yaml"
)

// source is one manifest to copy out of the Cluster API module.
type source struct {
	// module is the Go module the manifest is in: "" for sigs.k8s.io/cluster-api, "test" for
	// sigs.k8s.io/cluster-api/test.
	module string
	// path relative to the module root.
	path string
	// version is the storage version, the only one kept and served: no conversion webhook runs
	// in Flotilla.
	version string
	// labels added to the CRD's metadata.
	labels map[string]string
}

// providerLabels are the labels `clusterctl init` puts on the core provider's components.
var providerLabels = map[string]string{
	"clusterctl.cluster.x-k8s.io": "",
	"cluster.x-k8s.io/provider":   "cluster-api",
}

// inventoryLabels are the labels clusterctl puts on its provider inventory CRD.
var inventoryLabels = map[string]string{
	"clusterctl.cluster.x-k8s.io/core": "inventory",
}

func coreCRD(name string) source {
	return source{path: filepath.Join("core", "config", "crd", "bases", name), version: "v1beta2", labels: providerLabels}
}

// kubeadmCRD is a CRD of one of the kubeadm providers (dir: bootstrap or controlplane). Flotilla
// embeds them in its own manager, as it does the core, so they carry the core's labels, plus the
// contract label by which the core finds the version of a bootstrap or control plane object
// (the kubeadm providers' kustomization adds it).
func kubeadmCRD(dir, name string) source {
	labels := map[string]string{"cluster.x-k8s.io/v1beta2": "v1beta2"}
	for k, v := range providerLabels {
		labels[k] = v
	}
	return source{path: filepath.Join(dir, "kubeadm", "config", "crd", "bases", name), version: "v1beta2", labels: labels}
}

// inMemoryCRD is a CRD of Cluster API's in-memory provider (the DevCluster and DevMachine
// provider of sigs.k8s.io/cluster-api/test's infrastructure/docker, with its in-memory backend),
// which Flotilla runs as a provider process of its manager. Its labels are those clusterctl puts
// on an infrastructure provider's components, and the contract label its kustomization adds.
func inMemoryCRD(name string) source {
	return source{
		module:  "test",
		path:    filepath.Join("infrastructure", "docker", "config", "crd", "bases", name),
		version: "v1beta2",
		labels: map[string]string{
			"clusterctl.cluster.x-k8s.io": "",
			"cluster.x-k8s.io/provider":   "infrastructure-in-memory",
			"cluster.x-k8s.io/v1beta2":    "v1beta2",
		},
	}
}

var crdSources = []source{
	coreCRD("cluster.x-k8s.io_clusters.yaml"),
	coreCRD("cluster.x-k8s.io_machines.yaml"),
	coreCRD("cluster.x-k8s.io_machinesets.yaml"),
	coreCRD("cluster.x-k8s.io_machinedeployments.yaml"),
	coreCRD("cluster.x-k8s.io_machinehealthchecks.yaml"),
	coreCRD("cluster.x-k8s.io_machinepools.yaml"),
	coreCRD("cluster.x-k8s.io_machinedrainrules.yaml"),
	coreCRD("cluster.x-k8s.io_clusterclasses.yaml"),
	coreCRD("addons.cluster.x-k8s.io_clusterresourcesets.yaml"),
	coreCRD("addons.cluster.x-k8s.io_clusterresourcesetbindings.yaml"),
	coreCRD("ipam.cluster.x-k8s.io_ipaddresses.yaml"),
	coreCRD("ipam.cluster.x-k8s.io_ipaddressclaims.yaml"),
	coreCRD("runtime.cluster.x-k8s.io_extensionconfigs.yaml"),
	// The kubeadm bootstrap and control plane providers, embedded for the Packet provider.
	kubeadmCRD("bootstrap", "bootstrap.cluster.x-k8s.io_kubeadmconfigs.yaml"),
	kubeadmCRD("bootstrap", "bootstrap.cluster.x-k8s.io_kubeadmconfigtemplates.yaml"),
	kubeadmCRD("controlplane", "controlplane.cluster.x-k8s.io_kubeadmcontrolplanes.yaml"),
	kubeadmCRD("controlplane", "controlplane.cluster.x-k8s.io_kubeadmcontrolplanetemplates.yaml"),
	{
		path:    filepath.Join("cmd", "clusterctl", "config", "crd", "bases", "clusterctl.cluster.x-k8s.io_providers.yaml"),
		version: "v1alpha3",
		labels:  inventoryLabels,
	},
	inMemoryCRD("infrastructure.cluster.x-k8s.io_devclusters.yaml"),
	inMemoryCRD("infrastructure.cluster.x-k8s.io_devclustertemplates.yaml"),
	inMemoryCRD("infrastructure.cluster.x-k8s.io_devmachines.yaml"),
	inMemoryCRD("infrastructure.cluster.x-k8s.io_devmachinetemplates.yaml"),
}

// webhookSources are the admission webhook manifests copied, by the file name they get: the
// core's, and those of the kubeadm bootstrap and control plane providers.
var webhookSources = []struct{ path, name string }{
	{filepath.Join("core", "config", "webhook", "manifests.yaml"), "manifests.yaml"},
	{filepath.Join("bootstrap", "kubeadm", "config", "webhook", "manifests.yaml"), "kubeadm-bootstrap.yaml"},
	{filepath.Join("controlplane", "kubeadm", "config", "webhook", "manifests.yaml"), "kubeadm-controlplane.yaml"},
}

func main() {
	capiDir := flag.String("capi-dir", "", "root of the sigs.k8s.io/cluster-api module (go list -m -f '{{.Dir}}' sigs.k8s.io/cluster-api)")
	capiTestDir := flag.String("capi-test-dir", "", "root of the sigs.k8s.io/cluster-api/test module")
	capiVersion := flag.String("capi-version", "", "version of the sigs.k8s.io/cluster-api module, recorded in each file's header")
	crdOut := flag.String("crd-out", "config/crd/capi", "directory the CRDs are written to (its *.yaml files are replaced)")
	webhookOut := flag.String("webhook-out", "config/webhook/capi", "directory the webhook manifest is written to")
	flag.Parse()

	if err := run(map[string]string{"": *capiDir, "test": *capiTestDir}, *capiVersion, *crdOut, *webhookOut); err != nil {
		fmt.Fprintf(os.Stderr, "capicrds: %v\n", err)
		os.Exit(1)
	}
}

func run(moduleDirs map[string]string, capiVersion, crdOut, webhookOut string) error {
	if moduleDirs[""] == "" || moduleDirs["test"] == "" || capiVersion == "" {
		return errors.New("-capi-dir, -capi-test-dir and -capi-version are required")
	}
	capiDir := moduleDirs[""]
	if err := clearYAML(crdOut); err != nil {
		return err
	}
	for _, src := range crdSources {
		in, err := os.ReadFile(filepath.Join(moduleDirs[src.module], src.path))
		if err != nil {
			return fmt.Errorf("reading CRD: %w", err)
		}
		out, err := reduceCRD(in, src.version, src.labels)
		if err != nil {
			return fmt.Errorf("reducing %s: %w", src.path, err)
		}
		if err := write(filepath.Join(crdOut, filepath.Base(src.path)), modulePath(src.module)+"@"+capiVersion, src.path, out); err != nil {
			return err
		}
	}

	if err := clearYAML(webhookOut); err != nil {
		return err
	}
	for _, src := range webhookSources {
		in, err := os.ReadFile(filepath.Join(capiDir, src.path))
		if err != nil {
			return fmt.Errorf("reading webhook manifest: %w", err)
		}
		if err := write(filepath.Join(webhookOut, src.name), modulePath("")+"@"+capiVersion, src.path, in); err != nil {
			return err
		}
	}
	return nil
}

// reduceCRD keeps only the storage version of a CRD, which must be want, drops the conversion
// stanza and adds labels. Fields it does not touch are kept as they are.
func reduceCRD(in []byte, want string, labels map[string]string) ([]byte, error) {
	var crd map[string]any
	if err := yaml.Unmarshal(in, &crd); err != nil {
		return nil, fmt.Errorf("decoding: %w", err)
	}
	if crd["kind"] != "CustomResourceDefinition" {
		return nil, fmt.Errorf("kind is %v, want CustomResourceDefinition", crd["kind"])
	}
	metadata, _ := crd["metadata"].(map[string]any)
	spec, _ := crd["spec"].(map[string]any)
	if metadata == nil || spec == nil {
		return nil, errors.New("metadata or spec missing")
	}

	versions, _ := spec["versions"].([]any)
	var kept []any
	for _, v := range versions {
		version, _ := v.(map[string]any)
		if storage, _ := version["storage"].(bool); !storage {
			continue
		}
		version["served"] = true
		kept = append(kept, version)
	}
	if len(kept) != 1 {
		return nil, fmt.Errorf("found %d storage versions, want exactly 1", len(kept))
	}
	if name, _ := kept[0].(map[string]any)["name"].(string); name != want {
		return nil, fmt.Errorf("storage version is %s, want %s", name, want)
	}
	spec["versions"] = kept
	delete(spec, "conversion")

	existing, _ := metadata["labels"].(map[string]any)
	if existing == nil {
		existing = map[string]any{}
	}
	for k, v := range labels {
		existing[k] = v
	}
	metadata["labels"] = existing

	return yaml.Marshal(crd)
}

// clearYAML creates dir and removes the *.yaml files it holds, so that a CRD dropped upstream
// does not linger.
func clearYAML(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	old, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return fmt.Errorf("listing %s: %w", dir, err)
	}
	sort.Strings(old)
	for _, f := range old {
		if err := os.Remove(f); err != nil {
			return fmt.Errorf("removing stale %s: %w", f, err)
		}
	}
	return nil
}

// modulePath is the Go module a source's module key names.
func modulePath(module string) string {
	if module == "" {
		return "sigs.k8s.io/cluster-api"
	}
	return "sigs.k8s.io/cluster-api/" + module
}

func write(path, moduleVersion, from string, body []byte) error {
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "# Code generated by hack/capi-crds.sh from %s %s. DO NOT EDIT.\n", moduleVersion, filepath.ToSlash(from))
	if !bytes.HasPrefix(body, []byte("---")) {
		buf.WriteString("---\n")
	}
	buf.Write(body)
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
