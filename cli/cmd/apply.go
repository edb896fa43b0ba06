package cmd

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/flotilla-dev/flotilla/cli/client"
)

// ApplyOptions are the options of `flotilla apply`.
type ApplyOptions struct {
	clientOptions
	// File holds the objects.
	File string
	// Wait is how long to wait for the objects to be Ready; 0 does not wait.
	Wait time.Duration
}

// NewApplyCmd returns `flotilla apply`.
func NewApplyCmd(streams genericiooptions.IOStreams, global *GlobalOptions) *cobra.Command {
	o := &ApplyOptions{clientOptions: newClientOptions(streams, global, streams.Out)}
	cmd := &cobra.Command{
		Use:   "apply -f FILE --kubeconfig KUBECONFIG",
		Short: "Apply Kubernetes objects from a file, such as a HelmChartProxy, and wait until they are Ready",
		Long: `Server-side apply every object of FILE (YAML documents separated by ---) to the cluster of
--kubeconfig, as kubectl apply --server-side would; namespaced objects without a namespace go to
"default". Every object is applied in a dry run first, so one the API server refuses leaves the
others unapplied. With --wait, wait until each applied object that reports conditions has
Ready=True for its current generation.`,
		Example: `  flotilla apply -f docs/examples/hello-addon.yaml --kubeconfig mgmt/mgmt.kubeconfig --wait 3m`,
		Args:    cobra.NoArgs,
		RunE:    RunE(o),
	}
	cmd.Flags().StringVarP(&o.File, "filename", "f", "", "file of the objects to apply")
	cmd.Flags().DurationVar(&o.Wait, "wait", 0, "wait this long for the objects to be Ready (e.g. 3m); 0 returns once they are applied")
	return cmd
}

// Validate checks the flags.
func (o *ApplyOptions) Validate() error {
	if o.File == "" {
		return errors.New("-f FILE is required: the objects to apply")
	}
	if o.global.Kubeconfig == "" {
		return errors.New("--kubeconfig is required: the cluster to apply to, such as mgmt/mgmt.kubeconfig")
	}
	return nil
}

// Run applies the file.
func (o *ApplyOptions) Run(ctx context.Context) error {
	applied, err := o.client.ApplyFile(ctx, client.ApplyFileOptions{File: o.File, Kubeconfig: o.global.Kubeconfig, Wait: o.Wait})
	if err != nil {
		return err
	}
	for _, u := range applied {
		fmt.Fprintf(o.Out, "%s/%s applied\n", u.GetKind(), u.GetName())
	}
	return nil
}
