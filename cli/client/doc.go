// Package client is the library behind the flotilla commands: the commands in cli/cmd parse flags
// and print, and everything they do happens here, so the end-to-end tests drive exactly what a user
// runs.
//
// # Management clusters
//
// CreateManagementCluster runs the management workflow as named phases (see cli/workflow):
//
//	SetupAndValidate               the spec parses strictly, binaries exist, the name is free
//	CreateBootstrapCluster         an ephemeral local control plane <name>-bootstrap
//	InstallComponents              CRDs, provider inventory and a manager process on it
//	CreateWorkloadCluster          the Cluster applied to the bootstrap; its manager creates the
//	                               new cluster's control plane processes and workers
//	MoveManagement                 clusterctl move of the cluster's objects to the new cluster
//	InstallComponentsOnManagement  a manager process on the new cluster, which adopts the running
//	                               control plane: from here on the cluster manages itself
//	InstallAddOns                  add-ons the management cluster needs
//	DeleteBootstrap                the bootstrap cluster's processes and data are removed
//
// A failed run leaves a checkpoint in <home>/clusters/<name>/checkpoint.json; running the same
// command again resumes after the last completed phase.
//
// # Files
//
// Everything a local cluster needs lives under <home>/clusters/<name>/ (home is $FLOTILLA_HOME,
// default ~/.flotilla): the control plane's PKI, data, logs and pid files (see pkg/controlplane),
// and for a management cluster its manager's pid file, log and webhook certificates. The
// kubeconfig handed to the user is written to ./<name>/<name>.kubeconfig.
package client
