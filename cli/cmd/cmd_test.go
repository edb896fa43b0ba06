package cmd

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/flotilla-dev/flotilla/cluster/spec"
	"github.com/flotilla-dev/flotilla/pkg/version"
)

// run runs flotilla with args in-process and returns what it printed.
func run(args ...string) (stdout, stderr string, err error) {
	streams, _, out, errOut := genericiooptions.NewTestIOStreams()
	root := NewRootCmd(streams)
	root.SetArgs(args)
	err = root.Execute()
	return out.String(), errOut.String(), err
}

func TestVersion(t *testing.T) {
	t.Run("prints the client version on one line", func(t *testing.T) {
		g := NewWithT(t)
		out, _, err := run("version")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(out).To(Equal("Client Version: " + version.Get().String() + "\n"))
	})
	t.Run("prints JSON for -o json", func(t *testing.T) {
		g := NewWithT(t)
		out, _, err := run("version", "-o", "json")
		g.Expect(err).NotTo(HaveOccurred())
		var got versionOutput
		g.Expect(json.Unmarshal([]byte(out), &got)).To(Succeed())
		g.Expect(got.ClientVersion).To(Equal(version.Get()))
	})
	t.Run("prints YAML for -o yaml", func(t *testing.T) {
		g := NewWithT(t)
		out, _, err := run("version", "-o", "yaml", "-v", "2")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(out).To(HavePrefix("clientVersion:\n"))
		g.Expect(out).To(ContainSubstring("  version: " + version.Get().Version + "\n"))
	})
	t.Run("rejects other output formats", func(t *testing.T) {
		g := NewWithT(t)
		_, _, err := run("version", "-o", "wide")
		g.Expect(err).To(MatchError("-o wide is not supported here; use one of: json, yaml"))
	})
}

func TestGenerateClusterConfig(t *testing.T) {
	tests := []struct {
		name           string
		args           []string
		wantManagement bool
		wantWorkers    int32
		wantVersion    string
	}{
		{
			name:        "the defaults describe a workload cluster with two workers on the newest Kubernetes",
			args:        []string{"generate", "clusterconfig", "w1", "--provider", "local"},
			wantWorkers: 2, wantVersion: "v1.36.3",
		},
		{
			name:           "--management=true describes a management cluster",
			args:           []string{"generate", "clusterconfig", "mgmt", "--provider", "local", "--management=true"},
			wantManagement: true, wantWorkers: 2, wantVersion: "v1.36.3",
		},
		{
			name:        "--kubernetes-version and --workers are honoured",
			args:        []string{"generate", "clusterconfig", "old", "--kubernetes-version", "1.35", "--workers", "5"},
			wantWorkers: 5, wantVersion: "v1.35.4",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			out, _, err := run(tt.args...)
			g.Expect(err).NotTo(HaveOccurred())

			// What generate prints, create loads.
			path := filepath.Join(t.TempDir(), tt.args[2]+".yaml")
			g.Expect(os.WriteFile(path, []byte(out), 0o600)).To(Succeed())
			s, err := spec.Load(path)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(s.Cluster.Name).To(Equal(tt.args[2]))
			g.Expect(s.Cluster.Spec.Management).To(Equal(tt.wantManagement))
			g.Expect(s.Cluster.Spec.WorkerNodeGroups[0].Count).To(Equal(tt.wantWorkers))
			g.Expect(s.KubernetesVersion).To(Equal(tt.wantVersion))
		})
	}
}

func TestGenerateClusterConfigRejectsBadInput(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{
			name: "an unknown provider lists the supported ones",
			args: []string{"generate", "clusterconfig", "w1", "--provider", "aws"},
			want: `unknown provider "aws": supported providers are local, packet, inmemory`,
		},
		{
			name: "the name is required",
			args: []string{"generate", "clusterconfig"},
			want: "NAME is required: flotilla generate clusterconfig NAME [flags]",
		},
		{
			name: "a negative number of workers is rejected",
			args: []string{"generate", "clusterconfig", "w1", "--workers=-1"},
			want: "--workers -1 is negative; use 0 or more",
		},
		{
			name: "an unknown flag points to the help",
			args: []string{"generate", "clusterconfig", "w1", "--worker", "3"},
			want: "unknown flag: --worker\nSee 'flotilla generate clusterconfig --help'",
		},
		{
			name: "an unknown noun of a verb is an error, not the help",
			args: []string{"generate", "clusterconfg", "w1"},
			want: `unknown command "clusterconfg" for "flotilla generate"; available: clusterconfig, package`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			out, _, err := run(tt.args...)
			g.Expect(err).To(MatchError(tt.want))
			g.Expect(out).To(BeEmpty())
		})
	}
}

func TestRootHelpListsTheCommands(t *testing.T) {
	g := NewWithT(t)
	out, _, err := run("--help")
	g.Expect(err).NotTo(HaveOccurred())
	for _, want := range []string{"generate", "version", "--kubeconfig", "--home", "--bin-dir", "-v, --v"} {
		g.Expect(out).To(ContainSubstring(want))
	}
}

func TestGlobalOptions(t *testing.T) {
	t.Run("defaults come from the environment", func(t *testing.T) {
		g := NewWithT(t)
		t.Setenv("FLOTILLA_HOME", "/srv/flotilla")
		t.Setenv("FLOTILLA_BIN_CACHE", "/srv/bin")
		o := NewGlobalOptions()
		g.Expect(o.Home).To(Equal("/srv/flotilla"))
		g.Expect(o.BinDir).To(Equal("/srv/bin"))
		g.Expect(o.Kubeconfig).To(BeEmpty(), "no management cluster unless one is named")
	})
	t.Run("without the environment the defaults are under the home directory", func(t *testing.T) {
		g := NewWithT(t)
		t.Setenv("HOME", "/home/me")
		t.Setenv("FLOTILLA_HOME", "")
		t.Setenv("FLOTILLA_BIN_CACHE", "")
		o := NewGlobalOptions()
		g.Expect(o.Home).To(Equal("/home/me/.flotilla"))
		g.Expect(o.BinDir).To(Equal("/home/me/.cache/flotilla/bin"))
	})
	t.Run("flags override the defaults and paths become absolute", func(t *testing.T) {
		g := NewWithT(t)
		t.Setenv("HOME", "/home/me")
		o := NewGlobalOptions()
		fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
		o.AddFlags(fs)
		g.Expect(fs.Parse([]string{"--kubeconfig", "mgmt/mgmt.kubeconfig", "--home=~/fl", "--bin-dir", "/opt/bin", "-v", "4"})).To(Succeed())
		g.Expect(o.Complete()).To(Succeed())
		wd, err := os.Getwd()
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(o).To(Equal(&GlobalOptions{
			Kubeconfig: filepath.Join(wd, "mgmt/mgmt.kubeconfig"),
			Home:       "/home/me/fl",
			BinDir:     "/opt/bin",
			Verbosity:  4,
		}))
	})
	t.Run("a negative verbosity is rejected", func(t *testing.T) {
		g := NewWithT(t)
		_, _, err := run("version", "-v", "-1")
		g.Expect(err).To(MatchError("-v -1: verbosity is 0 or more"))
	})
}

func TestPrintStructured(t *testing.T) {
	g := NewWithT(t)
	var buf bytes.Buffer
	g.Expect(PrintStructured(&buf, OutputJSON, map[string]int{"a": 1})).To(Succeed())
	g.Expect(buf.String()).To(Equal("{\n  \"a\": 1\n}\n"))
	buf.Reset()
	g.Expect(PrintStructured(&buf, OutputYAML, map[string]int{"a": 1})).To(Succeed())
	g.Expect(buf.String()).To(Equal("a: 1\n"))
	g.Expect(PrintStructured(&buf, "table", nil)).To(MatchError(`output format "table" is not json or yaml`))
}
