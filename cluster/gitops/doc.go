// Package gitops reads and writes the Git repository of cluster specs that a GitOpsConfig
// (cluster.flotilla.dev/v1alpha1) names. The CLI commits specs with it; the GitOpsConfig
// reconciler (cluster/reconcilers/gitops) pulls them. It speaks Git through go-git.
//
// # Layout
//
// A repository holds one directory per management cluster, and in it one per workload cluster;
// each cluster's spec is one spec file, as `flotilla create cluster -f` takes:
//
//	clusters/<management>/cluster.yaml                            the management cluster
//	clusters/<management>/workload-clusters/<name>/cluster.yaml   each workload cluster
//
// ManagementDir, ClusterDir and SpecPath compute these paths; RenderSpec renders a spec file
// from the objects of a parsed spec, deterministically, so the same spec always gives the same
// bytes.
//
// # Writing
//
// A Repository is a URL or the absolute path of a repository on this machine, and a branch.
// PutCluster and RemoveCluster change one cluster's files and commit, with a message that says
// what happened ("Update workload cluster w1 of management cluster mgmt"). They are
// idempotent: when the branch already holds the content, no commit is made (Result.Changed is
// false). Commits are built from the branch's head without a worktree:
//
//   - a URL is cloned into memory (one branch), and the commit pushed; an empty repository or a
//     missing branch gets its first commit;
//   - a path is written in place: the branch is moved with a compare-and-swap, and when the
//     branch is checked out there, the changed files of the checkout follow (its other files,
//     the user's own work, are left alone; a changed file with uncommitted changes stops the
//     commit before anything moves).
//
// When the branch moves between reading and publishing (someone else pushed), the change is
// redone on the new head, a few times at most.
//
// # Reading
//
// Repository.Pull returns a Snapshot of the branch's head: a path is read in place, a URL is
// fetched into a bare repository in a cache directory, so later pulls fetch only what is new.
// Snapshot.Specs lists the spec files of one management cluster in the layout, and
// Snapshot.Unchanged tells whether a file is the same as in an earlier commit, so only what
// changed needs applying.
//
// # Credentials
//
// AuthFromSecret builds go-git credentials from a credentials Secret's data (username and
// password for HTTPS; identity and known_hosts for SSH, checking the server's host key against
// known_hosts). AuthFromEnv gives the CLI the user's own HTTPS credentials from
// FLOTILLA_GIT_USERNAME and FLOTILLA_GIT_PASSWORD; for SSH the CLI uses the SSH agent. Both
// refuse to send a username and password over plain http:// to a host other than a loopback one
// (CheckCredentialsTransport, ErrCredentialsOverHTTP); go-git refuses redirects from https://
// to http://.
//
// # Timeouts
//
// Each exchange with the Git server of a URL (a clone, a fetch, a push) ends after
// Repository.Timeout (DefaultTimeout when zero), with an error wrapping ErrTimeout, so a server
// that accepts connections and never answers holds nothing up for longer.
package gitops
