package webhooks

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	infrav1 "github.com/flotilla-dev/flotilla/api/infrastructure/v1alpha1"
	packetspec "github.com/flotilla-dev/flotilla/infrastructure/packet/clusterspec"
)

func TestDefault(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := flotillav1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	mgmt := &flotillav1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: "mgmt", Namespace: "flotilla-system"},
		Spec:       flotillav1.ClusterSpec{Management: true},
	}
	tests := []struct {
		name     string
		existing []*flotillav1.Cluster
		mutate   func(*flotillav1.Cluster)
		check    func(g Gomega, c *flotillav1.Cluster)
	}{
		{
			name:   "a management cluster manages itself",
			mutate: func(c *flotillav1.Cluster) { c.Name = "mgmt"; c.Spec.Management = true },
			check: func(g Gomega, c *flotillav1.Cluster) {
				g.Expect(c.Spec.ManagementCluster.Name).To(Equal("mgmt"))
			},
		},
		{
			name:     "a workload cluster is managed by the management cluster of its API server",
			existing: []*flotillav1.Cluster{mgmt},
			check: func(g Gomega, c *flotillav1.Cluster) {
				g.Expect(c.Spec.ManagementCluster.Name).To(Equal("mgmt"))
			},
		},
		{
			name: "a workload cluster without a management cluster in its API server is left for the client to name",
			check: func(g Gomega, c *flotillav1.Cluster) {
				g.Expect(c.Spec.ManagementCluster.Name).To(BeEmpty())
			},
		},
		{
			name:     "a management cluster the spec names is kept",
			existing: []*flotillav1.Cluster{mgmt},
			mutate:   func(c *flotillav1.Cluster) { c.Spec.ManagementCluster.Name = "other" },
			check: func(g Gomega, c *flotillav1.Cluster) {
				g.Expect(c.Spec.ManagementCluster.Name).To(Equal("other"))
			},
		},
		{
			name: "the control plane count and the cluster network get their defaults",
			check: func(g Gomega, c *flotillav1.Cluster) {
				g.Expect(c.Spec.ControlPlane.Count).To(Equal(int32(1)))
				g.Expect(c.Spec.ClusterNetwork.Pods).To(Equal([]string{flotillav1.DefaultPodCIDR}))
				g.Expect(c.Spec.ClusterNetwork.Services).To(Equal([]string{flotillav1.DefaultServiceCIDR}))
			},
		},
		{
			name: "a cluster network the spec sets is kept",
			mutate: func(c *flotillav1.Cluster) {
				c.Spec.ClusterNetwork = flotillav1.ClusterNetwork{Pods: []string{"172.16.0.0/16"}, Services: []string{"10.128.0.0/12"}}
			},
			check: func(g Gomega, c *flotillav1.Cluster) {
				g.Expect(c.Spec.ClusterNetwork.Pods).To(Equal([]string{"172.16.0.0/16"}))
				g.Expect(c.Spec.ClusterNetwork.Services).To(Equal([]string{"10.128.0.0/12"}))
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			// The fake client stands in for the read-only lookup of existing Clusters.
			reader := fake.NewClientBuilder().WithScheme(scheme)
			for _, c := range tt.existing {
				reader = reader.WithObjects(c.DeepCopy())
			}
			c := &flotillav1.Cluster{
				ObjectMeta: metav1.ObjectMeta{Name: "w1", Namespace: "fleet"},
				Spec:       flotillav1.ClusterSpec{KubernetesVersion: "1.36"},
			}
			if tt.mutate != nil {
				tt.mutate(c)
			}
			g.Expect((&Cluster{Reader: reader.Build()}).Default(context.Background(), c)).To(Succeed())
			tt.check(g, c)
		})
	}
}

func TestConfigUpdatesAreCheckedWhenTheSpecChanges(t *testing.T) {
	w := &Config[*infrav1.PacketMachineConfig]{
		kind:     infrav1.GroupVersion.WithKind("PacketMachineConfig").GroupKind(),
		validate: packetspec.ValidateMachineConfig,
		spec:     func(o *infrav1.PacketMachineConfig) any { return o.Spec },
	}
	// A config created under older rules: no plan.
	old := &infrav1.PacketMachineConfig{ObjectMeta: metav1.ObjectMeta{Name: "old"}}

	t.Run("a change of its labels alone is allowed", func(t *testing.T) {
		g := NewWithT(t)
		changed := old.DeepCopy()
		changed.Labels = map[string]string{"clusterctl.cluster.x-k8s.io/move": ""}
		_, err := w.ValidateUpdate(context.Background(), old, changed)
		g.Expect(err).NotTo(HaveOccurred())
	})
	t.Run("a change of its spec is checked", func(t *testing.T) {
		g := NewWithT(t)
		changed := old.DeepCopy()
		changed.Spec.BillingCycle = "daily"
		_, err := w.ValidateUpdate(context.Background(), old, changed)
		g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
		g.Expect(err.Error()).To(ContainSubstring("spec.plan"))
	})
}

func TestInvalidNamesEveryField(t *testing.T) {
	g := NewWithT(t)
	errs := field.ErrorList{field.Required(field.NewPath("spec", "plan"), "name it"), field.Invalid(field.NewPath("spec", "metro"), "x", "use da")}
	err := invalid(infrav1.GroupVersion.WithKind("PacketMachineConfig").GroupKind(), "m", errs)
	g.Expect(apierrors.IsInvalid(err)).To(BeTrue())
	var causes []string
	for _, cause := range err.(apierrors.APIStatus).Status().Details.Causes {
		causes = append(causes, cause.Field)
	}
	g.Expect(causes).To(ConsistOf("spec.plan", "spec.metro"))
	g.Expect(invalid(infrav1.GroupVersion.WithKind("PacketMachineConfig").GroupKind(), "m", nil)).To(Succeed())
}

func TestAdminsAreTheConfiguredUsersAndGroups(t *testing.T) {
	masters := authenticationv1.UserInfo{Username: "kubernetes-admin", Groups: []string{"system:masters", "system:authenticated"}}
	flotillaAdmin := authenticationv1.UserInfo{Username: "carol", Groups: []string{AdminsGroup}}
	tenant := authenticationv1.UserInfo{Username: "tenant-a", Groups: []string{"system:authenticated", "team-a"}}
	manager := authenticationv1.UserInfo{Username: "system:serviceaccount:flotilla-system:gitops", Groups: []string{"system:serviceaccounts"}}
	tests := []struct {
		name   string
		admins Admins
		user   authenticationv1.UserInfo
		want   bool
	}{
		{name: "by default the masters group is trusted", user: masters, want: true},
		{name: "by default the flotilla-admins group is trusted", user: flotillaAdmin, want: true},
		{name: "by default a tenant is not", user: tenant},
		{name: "by default a component's service account is not", user: manager},
		{name: "a configured user is trusted", admins: Admins{Users: []string{"tenant-a"}}, user: tenant, want: true},
		{name: "configured users replace the default groups", admins: Admins{Users: []string{"tenant-a"}}, user: masters},
		{name: "a configured group is trusted", admins: Admins{Groups: []string{"team-a"}}, user: tenant, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(tt.admins.Include(tt.user)).To(Equal(tt.want))
		})
	}
}
