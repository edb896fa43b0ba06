package cmd

import (
	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	packagesv1 "github.com/flotilla-dev/flotilla/api/packages/v1alpha1"
)

// addPackagesClusterFlag registers the required --cluster flag of the packages commands.
func addPackagesClusterFlag(cmd *cobra.Command, p *string, what string) {
	cmd.Flags().StringVar(p, "cluster", "", what)
	_ = cmd.MarkFlagRequired("cluster")
}

// packageReady is the status of an object's Ready condition, "-" when it has none.
func packageReady(conds []metav1.Condition) string {
	c := meta.FindStatusCondition(conds, packagesv1.ReadyCondition)
	if c == nil {
		return "-"
	}
	return string(c.Status)
}
