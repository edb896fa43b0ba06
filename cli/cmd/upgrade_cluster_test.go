package cmd

import (
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/flotilla-dev/flotilla/cluster/spec"
)

func TestUpgradeCluster(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{
			name:    "-f is required",
			args:    []string{"upgrade", "cluster", "--kubeconfig", "mgmt/mgmt.kubeconfig"},
			wantErr: "-f FILE is required: the cluster's spec with the new worker counts or Kubernetes version",
		},
		{
			name:    "a workload cluster's spec without --kubeconfig says to pass the management cluster's",
			args:    []string{"upgrade", "cluster", "-f", "W1_SPEC"},
			wantErr: "is a workload cluster: upgrade it through its management cluster with --kubeconfig",
		},
		{
			name:    "a management cluster that does not run here says how to create it",
			args:    []string{"upgrade", "cluster", "-f", "MGMT_SPEC"},
			wantErr: `no management cluster named "mgmt" runs on this machine`,
		},
		{
			name:    "a management cluster's spec is sent to the management flow",
			args:    []string{"upgrade", "cluster", "-f", "MGMT_SPEC", "--kubeconfig", "mgmt/mgmt.kubeconfig"},
			wantErr: "spec.management is true",
		},
		{
			name:    "a kubeconfig that does not exist says what to pass",
			args:    []string{"upgrade", "cluster", "-f", "W1_SPEC", "--kubeconfig", "missing/mgmt.kubeconfig"},
			wantErr: "pass the management cluster's kubeconfig",
		},
	}
	dir := t.TempDir()
	files := map[string]string{
		"MGMT_SPEC": writeUpgradeSpec(t, dir, spec.GenerateOptions{Name: "mgmt", Provider: spec.ProviderLocal, Management: true}),
		"W1_SPEC":   writeUpgradeSpec(t, dir, spec.GenerateOptions{Name: "w1", Provider: spec.ProviderLocal, Workers: 2}),
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			args := append([]string{"--home", t.TempDir()}, tt.args...)
			for i, a := range args {
				if f, ok := files[a]; ok {
					args[i] = f
				}
			}
			_, _, err := run(args...)
			g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
		})
	}
}

func writeUpgradeSpec(t *testing.T, dir string, o spec.GenerateOptions) string {
	t.Helper()
	data, err := spec.Generate(o)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, o.Name+".yaml")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
