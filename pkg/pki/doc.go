// Package pki creates and checks the certificates and keys of a Kubernetes control plane, and
// the kubeconfig files built from them.
//
// # What it makes
//
//   - a certificate authority (NewCA): RSA 2048, valid ten years, the CA that CAPI's
//     <cluster>-ca Secret carries;
//   - serving certificates (NewServingCert) for kube-apiserver and etcd, with the DNS names and
//     IP addresses clients dial (APIServerSANs lists the ones kube-apiserver needs: localhost,
//     kubernetes, kubernetes.default, kubernetes.default.svc, kubernetes.default.svc.cluster.local,
//     127.0.0.1, the host address and the first address of the service range);
//   - client certificates (NewClientCert) whose subject names the Kubernetes user and groups,
//     e.g. O=system:masters for the admin, CN=system:kube-scheduler for the scheduler;
//   - the service account signing key pair (NewServiceAccountKey), RSA 2048;
//   - kubeconfig bytes (Kubeconfig) that embed the CA and a client certificate.
//
// Leaf certificates use ECDSA P-256 keys, which take microseconds to generate, are valid one
// year and are renewed by the Ensure functions thirty days before they expire.
//
// # Files
//
// Every file is written with mode 0600 through a temporary file and a rename, so a reader never
// sees half a key. Certificates and keys are PEM: CERTIFICATE, RSA PRIVATE KEY or EC PRIVATE
// KEY, PUBLIC KEY.
//
// # Ensure: cheap when nothing changed
//
// EnsureCA, EnsureCert and EnsureServiceAccountKey load what is on disk and keep it when it is
// still right; they generate and write only what is missing, unreadable or no longer fits (a
// leaf not signed by the CA, missing a required name, with another subject, or close to expiry).
// They report whether they wrote anything, so callers know when a process must be restarted
// to pick up new files. Calling them on every reconcile costs a few file reads and parses.
//
// The policy that decides whether a certificate must be replaced is CertProblem, a pure
// function of the certificate, the request and the time.
package pki
