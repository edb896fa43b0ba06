package cmd

import (
	"io"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	packagesv1 "github.com/flotilla-dev/flotilla/api/packages/v1alpha1"
	"github.com/flotilla-dev/flotilla/cli/client"
)

// addPackagesClusterFlag registers the required --cluster flag of the packages commands.
func addPackagesClusterFlag(cmd *cobra.Command, p *string, what string) {
	cmd.Flags().StringVar(p, "cluster", "", what)
	_ = cmd.MarkFlagRequired("cluster")
}

// newPackagesClient returns the CLI library with the global options.
func newPackagesClient(global *GlobalOptions, errOut io.Writer) (*client.Client, error) {
	return client.New(global.Home, global.BinDir, errOut)
}

// packageReady is the status of an object's Ready condition, "-" when it has none.
func packageReady(conds []metav1.Condition) string {
	c := meta.FindStatusCondition(conds, packagesv1.ReadyCondition)
	if c == nil {
		return "-"
	}
	return string(c.Status)
}
