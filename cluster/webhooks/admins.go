package webhooks

import (
	"context"
	"slices"

	authenticationv1 "k8s.io/api/authentication/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// Groups trusted as admins by default.
const (
	// MastersGroup is Kubernetes' group of cluster administrators: the admin kubeconfig of every
	// Flotilla management cluster (and of its bootstrap cluster) is in it.
	MastersGroup = "system:masters"
	// AdminsGroup is the group an admin puts other admins in (with a client certificate's O, or
	// an identity provider's groups claim) without making them cluster administrators.
	AdminsGroup = "flotilla-admins"
)

// Admins are the identities the webhooks trust with what only admins may do: creating a
// management cluster, naming or changing a cluster's management cluster, and serving a local
// control plane off loopback. The manager's --admin-groups and --admin-users set them; the zero
// value means DefaultAdmins.
type Admins struct {
	// Users are user names, as the API server authenticated them (such as alice, or
	// system:serviceaccount:flotilla-system:gitops).
	Users []string
	// Groups are group names; a request from a member of any of them is an admin's.
	Groups []string
}

// DefaultAdmins trusts the groups MastersGroup and AdminsGroup.
func DefaultAdmins() Admins {
	return Admins{Groups: []string{MastersGroup, AdminsGroup}}
}

// orDefault is a, or DefaultAdmins when a names no one.
func (a Admins) orDefault() Admins {
	if len(a.Users) == 0 && len(a.Groups) == 0 {
		return DefaultAdmins()
	}
	return a
}

// Include reports whether user is one of the admins.
func (a Admins) Include(user authenticationv1.UserInfo) bool {
	a = a.orDefault()
	if slices.Contains(a.Users, user.Username) {
		return true
	}
	return slices.ContainsFunc(user.Groups, func(g string) bool { return slices.Contains(a.Groups, g) })
}

// fromAdmin reports whether the admission request in ctx comes from one of the admins; false
// when ctx holds no request.
func (a Admins) fromAdmin(ctx context.Context) bool {
	req, err := admission.RequestFromContext(ctx)
	return err == nil && a.Include(req.UserInfo)
}
