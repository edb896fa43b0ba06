package cmd

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// RegistryHTPasswdOptions are the options of `flotilla registry htpasswd`.
type RegistryHTPasswdOptions struct {
	clientOptions

	User, File string
	password   string
}

// NewRegistryHTPasswdCmd returns `flotilla registry htpasswd`.
func NewRegistryHTPasswdCmd(streams genericiooptions.IOStreams, global *GlobalOptions) *cobra.Command {
	o := &RegistryHTPasswdOptions{clientOptions: newClientOptions(streams, global, streams.ErrOut)}
	cmd := &cobra.Command{
		Use:   "htpasswd USER",
		Short: "Add a registry user, or change a user's password, in an htpasswd file",
		Long: `Read a password from the input stream (its first line) and set it, as a bcrypt hash, for USER
in --file (default $FLOTILLA_HOME/registry/htpasswd, created with mode 0600), keeping the other
users. Give the file to 'flotilla registry serve --htpasswd' or 'start --htpasswd'; a running
registry reads it when it starts, so restart it to apply a change. Files written by Apache's
'htpasswd -B' work too.`,
		Example: `  flotilla registry htpasswd ci < ci-password.txt
  printf '%s\n' "$PASSWORD" | flotilla registry htpasswd alice --file registry.htpasswd`,
		Args: exactlyOneArg("USER"),
		RunE: RunE(o),
	}
	cmd.Flags().StringVar(&o.File, "file", "", "htpasswd file to update (default $FLOTILLA_HOME/registry/htpasswd)")
	return cmd
}

// Complete reads the password from the input stream and builds the client.
func (o *RegistryHTPasswdOptions) Complete(cmd *cobra.Command, args []string) error {
	o.User = args[0]
	line, err := bufio.NewReader(o.In).ReadString('\n')
	if err != nil && line == "" {
		return errors.New("no password on the input stream: pipe it in, such as: flotilla registry htpasswd " + o.User + " < password.txt")
	}
	o.password = strings.TrimRight(line, "\r\n")
	if o.File != "" {
		if o.File, err = absPath(o.File); err != nil {
			return err
		}
	}
	return o.clientOptions.Complete(cmd, args)
}

// Validate refuses an empty password.
func (o *RegistryHTPasswdOptions) Validate() error {
	if o.password == "" {
		return errors.New("the password on the input stream is empty")
	}
	return nil
}

// Run writes the user.
func (o *RegistryHTPasswdOptions) Run(context.Context) error {
	file, err := o.client.SetRegistryUser(o.File, o.User, o.password)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(o.Out, "Set the password of %s in %s\n", o.User, file)
	return err
}
