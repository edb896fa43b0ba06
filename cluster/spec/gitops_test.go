package spec

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
)

// gitOpsRef is spec.gitOpsRef naming GitOpsConfig "fleet", to insert after validSpec's
// kubernetesVersion line (line 9), so the Cluster's later lines move down by 3.
const gitOpsRef = `  kubernetesVersion: "1.36"
  gitOpsRef:
    kind: GitOpsConfig
    name: fleet
`

// gitOpsConfig is a GitOpsConfig document to append to validSpec, after which it starts on
// line 42 (45 with gitOpsRef inserted).
const gitOpsConfig = `---
apiVersion: cluster.flotilla.dev/v1alpha1
kind: GitOpsConfig
metadata:
  name: fleet
spec:
  repository: /srv/fleet.git
`

func TestParseTakesTheGitOpsConfigApart(t *testing.T) {
	g := NewWithT(t)
	data := edit(t, "  kubernetesVersion: \"1.36\"\n", gitOpsRef) + gitOpsConfig

	s, err := Parse("w1.yaml", []byte(data))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(s.Cluster.Spec.GitOpsRef).To(Equal(&flotillav1.Ref{Kind: "GitOpsConfig", Name: "fleet"}))
	g.Expect(s.GitOpsConfig).NotTo(BeNil())
	g.Expect(s.GitOpsConfig.APIVersion).To(Equal("cluster.flotilla.dev/v1alpha1"))
	g.Expect(s.GitOpsConfig.Kind).To(Equal("GitOpsConfig"))
	g.Expect(s.GitOpsConfig.Namespace).To(Equal("default"))
	g.Expect(s.GitOpsConfig.Spec.Repository).To(Equal("/srv/fleet.git"))
	g.Expect(s.GitOpsConfig.Spec.Branch).To(Equal("main"), "defaulted as the API server does")
	g.Expect(s.GitOpsConfig.Spec.Interval.Duration).To(Equal(time.Minute), "defaulted as the API server does")
	g.Expect(s.Objects).NotTo(ContainElement(s.GitOpsConfig), "it is applied on its own, to the management cluster")
	g.Expect(s.Objects).To(HaveLen(3))
}

func TestParseAcceptsAWorkloadClusterNamingItsManagementClustersGitOpsConfig(t *testing.T) {
	g := NewWithT(t)
	s, err := Parse("w1.yaml", []byte(edit(t, "  kubernetesVersion: \"1.36\"\n", gitOpsRef)))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(s.Cluster.Spec.GitOpsRef.Name).To(Equal("fleet"))
	g.Expect(s.GitOpsConfig).To(BeNil())
}

func TestParseRejectsInvalidGitOps(t *testing.T) {
	withRef := func(t *testing.T, pairs ...string) string {
		return strings.Replace(edit(t, pairs...), "  kubernetesVersion: \"1.36\"\n", gitOpsRef, 1)
	}
	tests := []struct {
		name string
		spec func(t *testing.T) string
		want string
	}{
		{
			name: "a GitOpsConfig the Cluster does not name",
			spec: func(t *testing.T) string { return validSpec + gitOpsConfig },
			want: `w1.yaml:7: document 1 (Cluster "w1"): spec.gitOpsRef: missing; the file has GitOpsConfig "fleet": set gitOpsRef to {kind: GitOpsConfig, name: fleet}, or remove the GitOpsConfig`,
		},
		{
			name: "a gitOpsRef of another kind",
			spec: func(t *testing.T) string {
				return strings.Replace(withRef(t), "kind: GitOpsConfig\n    name: fleet", "kind: FluxConfig\n    name: fleet", 1) + gitOpsConfig
			},
			want: `w1.yaml:11: document 1 (Cluster "w1"): spec.gitOpsRef.kind: "FluxConfig" is not supported; use GitOpsConfig`,
		},
		{
			name: "a gitOpsRef naming a GitOpsConfig the file does not have",
			spec: func(t *testing.T) string {
				return withRef(t) + strings.Replace(gitOpsConfig, "name: fleet", "name: other", 1)
			},
			want: `w1.yaml:12: document 1 (Cluster "w1"): spec.gitOpsRef.name: GitOpsConfig "fleet" not found in w1.yaml (the file has "other"); fix the name`,
		},
		{
			name: "a management cluster without its GitOpsConfig",
			spec: func(t *testing.T) string { return withRef(t, "management: false", "management: true") },
			want: `w1.yaml:10: document 1 (Cluster "w1"): spec.gitOpsRef: GitOpsConfig "fleet" not found in w1.yaml; a management cluster's spec holds its GitOpsConfig`,
		},
		{
			name: "a relative repository path",
			spec: func(t *testing.T) string {
				return withRef(t) + strings.Replace(gitOpsConfig, "/srv/fleet.git", "fleet", 1)
			},
			want: `w1.yaml:50: document 4 (GitOpsConfig "fleet"): spec.repository: repository "fleet" is a relative path: use an absolute path`,
		},
		{
			name: "an invalid branch",
			spec: func(t *testing.T) string { return withRef(t) + gitOpsConfig + "  branch: a..b\n" },
			want: `w1.yaml:51: document 4 (GitOpsConfig "fleet"): spec.branch: branch "a..b" is not a valid branch name`,
		},
		{
			name: "an interval below a second",
			spec: func(t *testing.T) string { return withRef(t) + gitOpsConfig + "  interval: 100ms\n" },
			want: `w1.yaml:51: document 4 (GitOpsConfig "fleet"): spec.interval: 100ms is too short`,
		},
		{
			name: "an unknown field, with a suggestion",
			spec: func(t *testing.T) string { return withRef(t) + gitOpsConfig + "  repositry: x\n" },
			want: `w1.yaml:51: document 4 (GitOpsConfig "fleet"): spec.repositry: unknown field; did you mean "repository"?`,
		},
		{
			name: "two GitOpsConfigs",
			spec: func(t *testing.T) string {
				return withRef(t) + gitOpsConfig + strings.Replace(gitOpsConfig, "name: fleet", "name: other", 1)
			},
			want: `document 5 (GitOpsConfig "other"): a spec file holds at most one GitOpsConfig, and document 4 (GitOpsConfig "fleet") is already one`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := Parse("w1.yaml", []byte(tt.spec(t)))
			g.Expect(err).To(MatchError(ContainSubstring(tt.want)))
		})
	}
}

func TestGeneratedGitOpsConfigLoadsOnceUncommented(t *testing.T) {
	g := NewWithT(t)
	out, err := Generate(GenerateOptions{Name: "mgmt", Provider: ProviderLocal, Management: true, Workers: 1})
	g.Expect(err).NotTo(HaveOccurred())
	text := string(out)
	g.Expect(text).To(ContainSubstring("  # gitOpsRef:\n"))

	// Uncomment spec.gitOpsRef and the GitOpsConfig document, as the comments say.
	text = strings.Replace(text, "  # gitOpsRef:\n  #   kind: GitOpsConfig\n  #   name: fleet\n",
		"  gitOpsRef:\n    kind: GitOpsConfig\n    name: fleet\n", 1)
	start := strings.Index(text, "# ---\n# apiVersion: cluster.flotilla.dev/v1alpha1\n# kind: GitOpsConfig")
	g.Expect(start).To(BeNumerically(">", 0))
	var uncommented []string
	for _, line := range strings.SplitAfter(text[start:], "\n") {
		uncommented = append(uncommented, strings.TrimPrefix(line, "# "))
	}
	text = text[:start] + strings.Join(uncommented, "")

	s, err := Parse("mgmt.yaml", []byte(text))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(s.Cluster.Spec.GitOpsRef).To(Equal(&flotillav1.Ref{Kind: "GitOpsConfig", Name: "fleet"}))
	g.Expect(s.GitOpsConfig.Spec.Repository).To(Equal("/srv/fleet.git"))
	g.Expect(s.GitOpsConfig.Spec.Branch).To(Equal("main"))
	g.Expect(s.GitOpsConfig.Spec.Interval.Duration).To(Equal(time.Minute))
}
