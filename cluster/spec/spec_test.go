package spec

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	infrav1 "github.com/flotilla-dev/flotilla/api/infrastructure/v1alpha1"
)

// validSpec is a complete, valid spec. Line numbers matter to the tests: the Cluster starts on
// line 2, the LocalDatacenterConfig on line 24, the LocalMachineConfig on line 32.
const validSpec = `# w1: a workload cluster
apiVersion: cluster.flotilla.dev/v1alpha1
kind: Cluster
metadata:
  name: w1
  namespace: default
spec:
  management: false
  kubernetesVersion: "1.36"
  controlPlane:
    count: 1
  datacenterRef:
    kind: LocalDatacenterConfig
    name: w1
  workerNodeGroups:
    - name: md-0
      count: 2
      machineGroupRef:
        kind: LocalMachineConfig
        name: w1-workers
      labels:
        tier: general
---
apiVersion: infrastructure.flotilla.dev/v1alpha1
kind: LocalDatacenterConfig
metadata:
  name: w1
  namespace: default
spec:
  scheduler: false
---
apiVersion: infrastructure.flotilla.dev/v1alpha1
kind: LocalMachineConfig
metadata:
  name: w1-workers
  namespace: default
spec:
  capacity:
    cpu: "8"
    memory: 32Gi
`

// edit returns validSpec with each old string replaced by the new one that follows it. It fails
// the test when an old string is not in the spec, so a case cannot silently test nothing.
func edit(t *testing.T, pairs ...string) string {
	t.Helper()
	s := validSpec
	for i := 0; i+1 < len(pairs); i += 2 {
		if !strings.Contains(s, pairs[i]) {
			t.Fatalf("the spec has no %q to replace", pairs[i])
		}
		s = strings.Replace(s, pairs[i], pairs[i+1], 1)
	}
	return s
}

func TestParseAcceptsAValidSpec(t *testing.T) {
	g := NewWithT(t)

	s, err := Parse("w1.yaml", []byte(validSpec))

	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(s.File).To(Equal("w1.yaml"))
	g.Expect(s.Provider).To(Equal(ProviderLocal))
	g.Expect(s.KubernetesVersion).To(Equal("v1.36.3"))

	g.Expect(s.Cluster.Name).To(Equal("w1"))
	g.Expect(s.Cluster.Spec.Management).To(BeFalse())
	g.Expect(s.Cluster.Spec.WorkerNodeGroups).To(Equal([]flotillav1.WorkerNodeGroup{{
		Name: "md-0", Count: 2,
		MachineGroupRef: flotillav1.Ref{Kind: "LocalMachineConfig", Name: "w1-workers"},
		Labels:          map[string]string{"tier": "general"},
	}}))
	g.Expect(s.Cluster.Spec.ManagementCluster.Name).To(BeEmpty(), "a workload cluster's manager is named at create time")

	dc, ok := s.Datacenter.(*infrav1.LocalDatacenterConfig)
	g.Expect(ok).To(BeTrue())
	g.Expect(dc.Name).To(Equal("w1"))
	g.Expect(dc.Spec.Scheduler).To(Equal(ptr.To(false)), "what the file says is kept")
	g.Expect(dc.Spec.ControllerManager).To(Equal(ptr.To(true)), "what the file leaves out is defaulted")

	g.Expect(s.MachineConfigs).To(HaveKey("w1-workers"))
	mc := s.MachineConfigs["w1-workers"].(*infrav1.LocalMachineConfig)
	g.Expect(mc.Spec.Capacity.Cpu().Equal(resource.MustParse("8"))).To(BeTrue())

	g.Expect(s.Objects).To(Equal([]ctrlclient.Object{s.Datacenter, mc, s.Cluster}), "configs first, then the Cluster that references them")
	var kinds []string
	for _, obj := range s.Objects {
		gvk := obj.GetObjectKind().GroupVersionKind()
		kinds = append(kinds, gvk.GroupVersion().String()+"/"+gvk.Kind)
	}
	g.Expect(kinds).To(Equal([]string{
		"infrastructure.flotilla.dev/v1alpha1/LocalDatacenterConfig",
		"infrastructure.flotilla.dev/v1alpha1/LocalMachineConfig",
		"cluster.flotilla.dev/v1alpha1/Cluster",
	}))
}

func TestParseAppliesDefaults(t *testing.T) {
	g := NewWithT(t)
	minimal := `---
apiVersion: cluster.flotilla.dev/v1alpha1
kind: Cluster
metadata:
  name: mgmt
spec:
  management: true
  kubernetesVersion: "1.35"
  datacenterRef: {kind: LocalDatacenterConfig, name: mgmt}
  controlPlane: {}
---
apiVersion: infrastructure.flotilla.dev/v1alpha1
kind: LocalDatacenterConfig
metadata:
  name: mgmt
`

	s, err := Parse("mgmt.yaml", []byte(minimal))

	g.Expect(err).NotTo(HaveOccurred())
	c := s.Cluster
	g.Expect(c.Namespace).To(Equal("default"))
	g.Expect(s.Datacenter.GetNamespace()).To(Equal("default"))
	g.Expect(c.Spec.ControlPlane.Count).To(Equal(int32(1)))
	g.Expect(c.Spec.ClusterNetwork.Pods).To(Equal([]string{"192.168.0.0/16"}))
	g.Expect(c.Spec.ClusterNetwork.Services).To(Equal([]string{"10.96.0.0/12"}))
	g.Expect(c.Spec.ManagementCluster.Name).To(Equal("mgmt"), "a management cluster manages itself")
	g.Expect(s.KubernetesVersion).To(Equal("v1.35.4"))
	g.Expect(s.MachineConfigs).To(BeEmpty())
	dc := s.Datacenter.(*infrav1.LocalDatacenterConfig)
	g.Expect(dc.Spec.ControllerManager).To(Equal(ptr.To(true)))
	g.Expect(dc.Spec.Scheduler).To(Equal(ptr.To(true)))
}

func TestParseAcceptsEveryWayOfWritingDocuments(t *testing.T) {
	tests := []struct {
		name string
		spec string
	}{
		{name: "a leading separator and comment-only documents are ignored", spec: "# header\n---\n---\n# nothing\n---\n" + validSpec},
		{name: "separators may carry a comment", spec: strings.ReplaceAll(validSpec, "---\n", "--- # next\n")},
		{name: "Windows line endings are read", spec: strings.ReplaceAll(validSpec, "\n", "\r\n")},
		{name: "the documents may come in any order", spec: validSpec[strings.Index(validSpec, "---\n")+4:] + "---\n" + validSpec[:strings.Index(validSpec, "---\n")]},
		{name: "the status of a Cluster is dropped", spec: strings.Replace(validSpec, "        tier: general\n", "        tier: general\nstatus:\n  phase: Ready\n", 1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			s, err := Parse("w1.yaml", []byte(tt.spec))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(s.Cluster.Name).To(Equal("w1"))
			g.Expect(s.Objects).To(HaveLen(3))
			g.Expect(s.Cluster.Status).To(BeZero())
		})
	}
}

func TestParseRejectsInvalidSpecs(t *testing.T) {
	tests := []struct {
		name string
		spec func(t *testing.T) string
		// want is the whole error message.
		want string
	}{
		{
			name: "invalid YAML is reported with its file line",
			spec: func(t *testing.T) string { return edit(t, "    cpu: \"8\"\n", "    cpu: \"8\n") },
			want: `w1.yaml:41: document 3: invalid YAML: found unexpected end of stream`,
		},
		{
			name: "a tab in the indentation is reported with its file line",
			spec: func(t *testing.T) string { return edit(t, "  scheduler: false", "\tscheduler: false") },
			want: `w1.yaml:30: document 2: invalid YAML: found character that cannot start any token`,
		},
		{
			name: "a key set twice is reported with its file line",
			spec: func(t *testing.T) string { return edit(t, "    count: 1\n", "    count: 1\n    count: 2\n") },
			want: `w1.yaml:12: document 1: invalid YAML: key "count" is set twice; keep one`,
		},
		{
			name: "an unknown field names the document, the field and the likely intended field",
			spec: func(t *testing.T) string { return edit(t, `kubernetesVersion: "1.36"`, `kubernetesVersoin: "1.36"`) },
			want: `w1.yaml:9: document 1 (Cluster "w1"): spec.kubernetesVersoin: unknown field; did you mean "kubernetesVersion"?`,
		},
		{
			name: "a field in the wrong case is unknown",
			spec: func(t *testing.T) string { return edit(t, "spec:\n  management", "Spec:\n  management") },
			want: `w1.yaml:7: document 1 (Cluster "w1"): Spec: unknown field; did you mean "spec"? (field names are case-sensitive)`,
		},
		{
			name: "an unknown field inside a list names its index and the known fields",
			spec: func(t *testing.T) string { return edit(t, "      count: 2\n", "      count: 2\n      replicas: 2\n") },
			want: `w1.yaml:18: document 1 (Cluster "w1"): spec.workerNodeGroups[0].replicas: unknown field; remove it (known fields here: class, count, kubernetesVersion, labels, machineGroupRef, name, nodes)`,
		},
		{
			name: "an unknown field of a provider config names that document",
			spec: func(t *testing.T) string { return edit(t, "  capacity:\n", "  cpus: 4\n  capacity:\n") },
			want: `w1.yaml:38: document 3 (LocalMachineConfig "w1-workers"): spec.cpus: unknown field; remove it (known fields here: capacity)`,
		},
		{
			name: "a value of the wrong type names its path with list indexes",
			spec: func(t *testing.T) string { return edit(t, "      count: 2", "      count: two") },
			want: `w1.yaml:17: document 1 (Cluster "w1"): spec.workerNodeGroups[0].count: expected an integer, got a string`,
		},
		{
			name: "an unquoted version is a number and must be quoted",
			spec: func(t *testing.T) string { return edit(t, `kubernetesVersion: "1.36"`, `kubernetesVersion: 1.36`) },
			want: `w1.yaml:9: document 1 (Cluster "w1"): spec.kubernetesVersion: expected a string, got a number; put it in quotes, as in "1.36" (unquoted, 1.20 would read as 1.2)`,
		},
		{
			name: "a document that is not a mapping is rejected",
			spec: func(t *testing.T) string { return validSpec + "---\n- a\n- b\n" },
			want: `w1.yaml:42: document 4: expected a mapping with apiVersion, kind, metadata and spec, got a list`,
		},
		{
			name: "a document without a kind is rejected",
			spec: func(t *testing.T) string { return edit(t, "\nkind: LocalMachineConfig\n", "\n") },
			want: `w1.yaml:32: document 3: kind: missing; every document names its kind, one of Cluster, LocalDatacenterConfig, LocalMachineConfig, PacketDatacenterConfig, PacketMachineConfig, GitOpsConfig, ClusterClass, or a template of a Cluster API provider (a kind ending in Template of a *.cluster.x-k8s.io group)`,
		},
		{
			name: "a document of an unknown kind is rejected",
			spec: func(t *testing.T) string { return edit(t, "\nkind: LocalMachineConfig", "\nkind: MachineConfig") },
			want: `w1.yaml:33: document 3: kind: "MachineConfig" is not a kind a cluster spec holds; use one of Cluster, LocalDatacenterConfig, LocalMachineConfig, PacketDatacenterConfig, PacketMachineConfig, GitOpsConfig, ClusterClass, or a template of a Cluster API provider (a kind ending in Template of a *.cluster.x-k8s.io group)`,
		},
		{
			name: "a document of the wrong apiVersion is rejected",
			spec: func(t *testing.T) string {
				return edit(t, "apiVersion: cluster.flotilla.dev/v1alpha1", "apiVersion: cluster.x-k8s.io/v1beta2")
			},
			want: `w1.yaml:2: document 1: apiVersion: "cluster.x-k8s.io/v1beta2" does not serve kind Cluster; use cluster.flotilla.dev/v1alpha1`,
		},
		{
			name: "an empty file is rejected",
			spec: func(*testing.T) string { return "# nothing here\n" },
			want: "w1.yaml: holds no documents; `flotilla generate clusterconfig NAME --provider local` prints a spec to start from",
		},
		{
			name: "a file without a Cluster is rejected",
			spec: func(*testing.T) string { return validSpec[strings.Index(validSpec, "---\n")+4:] },
			want: "w1.yaml: has no Cluster; add a document with apiVersion: cluster.flotilla.dev/v1alpha1 and kind: Cluster (`flotilla generate clusterconfig NAME --provider local` prints one)",
		},
		{
			name: "a file with two Clusters is rejected",
			spec: func(*testing.T) string {
				return validSpec + "---\napiVersion: cluster.flotilla.dev/v1alpha1\nkind: Cluster\nmetadata:\n  name: w2\n"
			},
			want: `w1.yaml:42: document 4 (Cluster "w2"): a spec file describes one cluster, and document 1 (Cluster "w1") is already one; put each cluster in its own file`,
		},
		{
			name: "a cluster name that is not a DNS label is rejected with a suggestion",
			spec: func(t *testing.T) string { return edit(t, "  name: w1\n  namespace", "  name: W1_test\n  namespace") },
			want: `w1.yaml:5: document 1 (Cluster "W1_test"): metadata.name: "W1_test" is not a valid cluster name: use at most 40 lowercase letters, digits and '-', starting and ending with a letter or digit, such as "w1-test"`,
		},
		{
			name: "a document without a name is rejected",
			spec: func(t *testing.T) string { return edit(t, "metadata:\n  name: w1-workers\n", "metadata:\n") },
			want: `w1.yaml:34: document 3 (LocalMachineConfig): metadata.name: missing; every document needs a name`,
		},
		{
			name: "a document in another namespace than the Cluster is rejected",
			spec: func(t *testing.T) string {
				return edit(t, "  name: w1-workers\n  namespace: default", "  name: w1-workers\n  namespace: other")
			},
			want: `w1.yaml:36: document 3 (LocalMachineConfig "w1-workers"): metadata.namespace: "other" differs from the Cluster's namespace "default"; the Cluster finds its configs in its own namespace, so use "default" (or leave it out) in every document`,
		},
		{
			name: "a document defined twice is rejected",
			spec: func(*testing.T) string {
				return validSpec + "---\napiVersion: infrastructure.flotilla.dev/v1alpha1\nkind: LocalMachineConfig\nmetadata:\n  name: w1-workers\n"
			},
			want: `w1.yaml:45: document 4 (LocalMachineConfig "w1-workers"): metadata.name: LocalMachineConfig "w1-workers" is already defined by document 3 (LocalMachineConfig "w1-workers"); rename one or remove it`,
		},
		{
			name: "a missing kubernetesVersion is rejected",
			spec: func(t *testing.T) string { return edit(t, "  kubernetesVersion: \"1.36\"\n", "") },
			want: `w1.yaml:7: document 1 (Cluster "w1"): spec.kubernetesVersion: missing; set the Kubernetes minor version, one of 1.36, 1.35`,
		},
		{
			name: "an unsupported kubernetesVersion is rejected",
			spec: func(t *testing.T) string { return edit(t, `kubernetesVersion: "1.36"`, `kubernetesVersion: "1.30"`) },
			want: `w1.yaml:9: document 1 (Cluster "w1"): spec.kubernetesVersion: Kubernetes 1.30 is not supported; use one of 1.36, 1.35`,
		},
		{
			name: "a full kubernetesVersion is rejected with the minor form to write",
			spec: func(t *testing.T) string { return edit(t, `kubernetesVersion: "1.36"`, `kubernetesVersion: "v1.36.3"`) },
			want: `w1.yaml:9: document 1 (Cluster "w1"): spec.kubernetesVersion: "v1.36.3" is not in the minor version form; write "1.36"`,
		},
		{
			name: "a kubernetesVersion that is no version is rejected",
			spec: func(t *testing.T) string { return edit(t, `kubernetesVersion: "1.36"`, `kubernetesVersion: "latest"`) },
			want: `w1.yaml:9: document 1 (Cluster "w1"): spec.kubernetesVersion: "latest" is not a Kubernetes minor version; use one of 1.36, 1.35`,
		},
		{
			name: "a datacenterRef to a missing config is rejected",
			spec: func(t *testing.T) string {
				return edit(t, "    kind: LocalDatacenterConfig\n    name: w1", "    kind: LocalDatacenterConfig\n    name: w2")
			},
			want: `w1.yaml:12: document 1 (Cluster "w1"): spec.datacenterRef: LocalDatacenterConfig "w2" not found in w1.yaml; add it or fix the name; the file has LocalDatacenterConfig "w1"`,
		},
		{
			name: "a datacenterRef of a kind that is no datacenter config is rejected",
			spec: func(t *testing.T) string {
				return edit(t, "    kind: LocalDatacenterConfig\n    name: w1", "    kind: LocalMachineConfig\n    name: w1")
			},
			want: `w1.yaml:13: document 1 (Cluster "w1"): spec.datacenterRef.kind: "LocalMachineConfig" is not a datacenter config kind; use one of LocalDatacenterConfig, PacketDatacenterConfig; the file has LocalDatacenterConfig "w1"`,
		},
		{
			name: "a missing datacenterRef is rejected",
			spec: func(t *testing.T) string {
				return edit(t, "  datacenterRef:\n    kind: LocalDatacenterConfig\n    name: w1\n", "")
			},
			want: `w1.yaml:7: document 1 (Cluster "w1"): spec.datacenterRef: missing; name the provider's datacenter config, such as {kind: LocalDatacenterConfig, name: w1}; the file has LocalDatacenterConfig "w1"`,
		},
		{
			name: "a datacenter config the Cluster does not use is rejected",
			spec: func(*testing.T) string {
				return validSpec + "---\napiVersion: infrastructure.flotilla.dev/v1alpha1\nkind: LocalDatacenterConfig\nmetadata:\n  name: other\n"
			},
			want: `w1.yaml:42: document 4 (LocalDatacenterConfig "other"): the Cluster uses document 2 (LocalDatacenterConfig "w1") through spec.datacenterRef, and a spec file holds one datacenter config; remove this one`,
		},
		{
			name: "a machineGroupRef to a missing config is rejected",
			spec: func(t *testing.T) string { return edit(t, "        name: w1-workers", "        name: w1-worker") },
			want: `w1.yaml:18: document 1 (Cluster "w1"): spec.workerNodeGroups[0].machineGroupRef: LocalMachineConfig "w1-worker" not found in w1.yaml; add it or fix the name (the file has "w1-workers")`,
		},
		{
			name: "a machineGroupRef of another kind is rejected",
			spec: func(t *testing.T) string {
				return edit(t, "        kind: LocalMachineConfig", "        kind: PacketMachineConfig")
			},
			want: `w1.yaml:19: document 1 (Cluster "w1"): spec.workerNodeGroups[0].machineGroupRef.kind: "PacketMachineConfig" is not a machine config of the local provider; use LocalMachineConfig`,
		},
		{
			name: "a missing machineGroupRef is rejected",
			spec: func(t *testing.T) string {
				return edit(t, "      machineGroupRef:\n        kind: LocalMachineConfig\n        name: w1-workers\n", "")
			},
			want: `w1.yaml:16: document 1 (Cluster "w1"): spec.workerNodeGroups[0].machineGroupRef: missing; name a LocalMachineConfig in w1.yaml`,
		},
		{
			name: "a control plane machineGroupRef to a missing config is rejected",
			spec: func(t *testing.T) string {
				return edit(t, "    count: 1\n", "    count: 1\n    machineGroupRef: {kind: LocalMachineConfig, name: cp}\n")
			},
			want: `w1.yaml:12: document 1 (Cluster "w1"): spec.controlPlane.machineGroupRef: LocalMachineConfig "cp" not found in w1.yaml; add it or fix the name (the file has "w1-workers")`,
		},
		{
			name: "a worker group name that is not a DNS label is rejected",
			spec: func(t *testing.T) string { return edit(t, "    - name: md-0", "    - name: MD_0") },
			want: `w1.yaml:16: document 1 (Cluster "w1"): spec.workerNodeGroups[0].name: "MD_0" is not a valid group name: use at most 40 lowercase letters, digits and '-', starting and ending with a letter or digit, such as "md-0"`,
		},
		{
			name: "worker group names are unique",
			spec: func(t *testing.T) string {
				return edit(t, "      labels:\n", "    - name: md-0\n      count: 1\n      machineGroupRef: {kind: LocalMachineConfig, name: w1-workers}\n      labels:\n")
			},
			want: `w1.yaml:21: document 1 (Cluster "w1"): spec.workerNodeGroups[1].name: "md-0" is already the name of spec.workerNodeGroups[0]; group names are unique`,
		},
		{
			name: "a negative worker count is rejected",
			spec: func(t *testing.T) string { return edit(t, "      count: 2", "      count: -1") },
			want: `w1.yaml:17: document 1 (Cluster "w1"): spec.workerNodeGroups[0].count: -1 is negative; use 0 or more`,
		},
		{
			name: "an invalid node label is rejected",
			spec: func(t *testing.T) string { return edit(t, "        tier: general", "        tier: \"not valid!\"") },
			want: `w1.yaml:21: document 1 (Cluster "w1"): spec.workerNodeGroups[0].labels: "not valid!" is not a valid label key or value: a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`,
		},
		{
			name: "the local provider runs one control plane",
			spec: func(t *testing.T) string { return edit(t, "    count: 1", "    count: 3") },
			want: `w1.yaml:11: document 1 (Cluster "w1"): spec.controlPlane.count: the local provider runs one hosted control plane per cluster; set it to 1`,
		},
		{
			name: "a control plane endpoint needs a host and a port",
			spec: func(t *testing.T) string {
				return edit(t, "    count: 1\n", "    count: 1\n    endpoint: {host: 127.0.0.1, port: 70000}\n")
			},
			want: `w1.yaml:12: document 1 (Cluster "w1"): spec.controlPlane.endpoint.port: 70000 is not a TCP port; use 1-65535, or remove the endpoint to let the provider choose`,
		},
		{
			name: "an address range that is no CIDR is rejected",
			spec: func(t *testing.T) string {
				return edit(t, "  workerNodeGroups:", "  clusterNetwork:\n    pods: [\"10.0.0.0\"]\n  workerNodeGroups:")
			},
			want: `w1.yaml:16: document 1 (Cluster "w1"): spec.clusterNetwork.pods[0]: "10.0.0.0" is not a CIDR block; write it as address/prefix, such as 192.168.0.0/16`,
		},
		{
			name: "a management cluster cannot be managed by another cluster",
			spec: func(t *testing.T) string {
				return edit(t, "  management: false\n", "  management: true\n  managementCluster: {name: mgmt}\n")
			},
			want: `w1.yaml:9: document 1 (Cluster "w1"): spec.managementCluster.name: "mgmt" is another cluster, but a management cluster manages itself; set it to "w1" or leave it out`,
		},
		{
			name: "a cluster and group name whose MachineDeployment name would not be a label value are rejected, as the API server would",
			spec: func(t *testing.T) string {
				return strings.ReplaceAll(edit(t, "    - name: md-0", "    - name: "+strings.Repeat("g", 40)), "name: w1\n", "name: "+strings.Repeat("c", 30)+"\n")
			},
			want: `w1.yaml:16: document 1 (Cluster "` + strings.Repeat("c", 30) + `"): spec.workerNodeGroups[0].name: the MachineDeployment name "` +
				strings.Repeat("c", 30) + "-" + strings.Repeat("g", 40) + `" would be longer than 63 characters: shorten the group or the cluster name`,
		},
		{
			name: "a worker group newer than the cluster is rejected",
			spec: func(t *testing.T) string {
				return edit(t, `kubernetesVersion: "1.36"`, `kubernetesVersion: "1.35"`, "      count: 2\n", "      count: 2\n      kubernetesVersion: \"1.36\"\n")
			},
			want: `w1.yaml:18: document 1 (Cluster "w1"): spec.workerNodeGroups[0].kubernetesVersion: 1.36 is newer than spec.kubernetesVersion 1.35: workers never run a newer version than their control plane; upgrade the cluster first`,
		},
		{
			name: "a machine config's capacity names resources a Node reports",
			spec: func(t *testing.T) string { return edit(t, `    cpu: "8"`, `    cpus: "8"`) },
			want: `w1.yaml:39: document 3 (LocalMachineConfig "w1-workers"): spec.capacity[cpus]: "cpus" is not a resource a Node reports; use cpu, memory, pods, ephemeral-storage, hugepages-<size>, or an extended resource such as example.com/gpu`,
		},
		{
			name: "every problem is reported at once, in file order",
			spec: func(t *testing.T) string {
				return edit(t, `kubernetesVersion: "1.36"`, `kubernetesVersion: "1.30"`, "        name: w1-workers", "        name: nope")
			},
			want: `w1.yaml has 2 problems:
  w1.yaml:9: document 1 (Cluster "w1"): spec.kubernetesVersion: Kubernetes 1.30 is not supported; use one of 1.36, 1.35
  w1.yaml:18: document 1 (Cluster "w1"): spec.workerNodeGroups[0].machineGroupRef: LocalMachineConfig "nope" not found in w1.yaml; add it or fix the name (the file has "w1-workers")`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)

			s, err := Parse("w1.yaml", []byte(tt.spec(t)))

			g.Expect(s).To(BeNil())
			g.Expect(err).To(HaveOccurred())
			g.Expect(err.Error()).To(Equal(tt.want))
			var specErr *Error
			g.Expect(errors.As(err, &specErr)).To(BeTrue())
			g.Expect(specErr.File).To(Equal("w1.yaml"))
		})
	}
}

func TestLoad(t *testing.T) {
	t.Run("a spec file is read from disk and named by its path in errors", func(t *testing.T) {
		g := NewWithT(t)
		path := filepath.Join(t.TempDir(), "w1.yaml")
		g.Expect(os.WriteFile(path, []byte(validSpec), 0o600)).To(Succeed())
		s, err := Load(path)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(s.File).To(Equal(path))

		g.Expect(os.WriteFile(path, []byte(strings.Replace(validSpec, "name: w1-workers", "name: x", 1)), 0o600)).To(Succeed())
		_, err = Load(path)
		g.Expect(err).To(MatchError(ContainSubstring(`not found in ` + path + `; add it or fix the name`)))
	})
	t.Run("a missing file is an error naming it", func(t *testing.T) {
		g := NewWithT(t)
		_, err := Load(filepath.Join(t.TempDir(), "nope.yaml"))
		g.Expect(err).To(MatchError(ContainSubstring("reading cluster spec: open ")))
		g.Expect(errors.Is(err, os.ErrNotExist)).To(BeTrue())
	})
}
