package manager

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	kubeadmcontrolplanev1 "sigs.k8s.io/cluster-api/api/controlplane/kubeadm/v1beta2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	infrav1 "github.com/flotilla-dev/flotilla/api/infrastructure/v1alpha1"
	"github.com/flotilla-dev/flotilla/pkg/scheme"
)

func gateCluster(kind, endpoint string, provisioned, initialized bool, annotations map[string]string) *clusterv1.Cluster {
	host, port, _ := net.SplitHostPort(endpoint)
	p, _ := strconv.Atoi(port)
	c := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "p1", Annotations: annotations}}
	c.Spec.InfrastructureRef = clusterv1.ContractVersionedObjectReference{APIGroup: infrav1.GroupVersion.Group, Kind: kind, Name: "p1"}
	c.Spec.ControlPlaneEndpoint = clusterv1.APIEndpoint{Host: host, Port: int32(p)}
	c.Status.Initialization.InfrastructureProvisioned = ptr.To(provisioned)
	c.Status.Initialization.ControlPlaneInitialized = ptr.To(initialized)
	return c
}

func TestGated(t *testing.T) {
	serving := map[string]string{flotillav1.EndpointServingAnnotation: "true"}
	tests := []struct {
		name    string
		cluster *clusterv1.Cluster
		want    bool
	}{
		{"infrastructure provisioned, API server not known to serve", gateCluster("PacketCluster", "127.40.0.1:6443", true, false, nil), true},
		{"infrastructure not provisioned yet: the cluster cache does not try anyway", gateCluster("PacketCluster", "127.40.0.1:6443", false, false, nil), false},
		{"the endpoint serves", gateCluster("PacketCluster", "127.40.0.1:6443", true, false, serving), false},
		{"the control plane is initialized (a cluster from before the gate)", gateCluster("PacketCluster", "127.40.0.1:6443", true, true, nil), false},
		{"a local cluster: provisioned only once its API server serves", gateCluster("LocalCluster", "127.0.0.1:6443", true, false, nil), false},
		{"no endpoint yet", gateCluster("PacketCluster", ":0", true, false, nil), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(gated(tt.cluster)).To(Equal(tt.want))
		})
	}
}

func TestReadyzStatusAndServes(t *testing.T) {
	g := NewWithT(t)
	gate := &endpointGate{}
	for code, want := range map[int]bool{
		http.StatusOK: true, http.StatusUnauthorized: true, http.StatusForbidden: false,
		http.StatusInternalServerError: false, http.StatusServiceUnavailable: false,
	} {
		srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/readyz" {
				w.WriteHeader(http.StatusNotFound)
				return
			}
			w.WriteHeader(code)
		}))
		status := readyzStatus(t.Context(), srv.Listener.Addr().String())
		srv.Close()
		g.Expect(status).To(Equal(code))
		g.Expect(gate.serves(types.NamespacedName{Name: strconv.Itoa(code)}, status)).To(Equal(want), "/readyz answering %d", code)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	g.Expect(err).NotTo(HaveOccurred())
	closed := l.Addr().String()
	_ = l.Close()
	g.Expect(readyzStatus(t.Context(), closed)).To(BeZero(), "a closed port answers nothing")

	// An endpoint that keeps answering 403 is let through after the grace.
	forbidden := types.NamespacedName{Namespace: "default", Name: "forbidden"}
	gate.forbiddenSince.Store(forbidden, time.Now().Add(-forbiddenGrace))
	g.Expect(gate.serves(forbidden, http.StatusForbidden)).To(BeTrue())
}

// The gate probes until the endpoint serves, then annotates the Cluster, which lets the cluster
// cache's filter through.
func TestEndpointGateAnnotatesOnceTheEndpointServes(t *testing.T) {
	g := NewWithT(t)
	s, err := scheme.New()
	g.Expect(err).NotTo(HaveOccurred())
	c := gateCluster("PacketCluster", "127.40.0.1:6443", true, false, nil)
	kc := fake.NewClientBuilder().WithScheme(s).WithObjects(c).Build()
	status := 0
	gate := &endpointGate{client: kc, probe: func(_ context.Context, address string) int {
		g.Expect(address).To(Equal("127.40.0.1:6443"))
		return status
	}}
	req := ctrl.Request{NamespacedName: ctrlclient.ObjectKeyFromObject(c)}

	res, err := gate.Reconcile(t.Context(), req)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.RequeueAfter).To(Equal(gateProbeInterval))
	g.Expect(kc.Get(t.Context(), req.NamespacedName, c)).To(Succeed())
	g.Expect(gated(c)).To(BeTrue())

	status = http.StatusOK
	res, err = gate.Reconcile(t.Context(), req)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.RequeueAfter).To(Equal(time.Duration(0)))
	g.Expect(kc.Get(t.Context(), req.NamespacedName, c)).To(Succeed())
	g.Expect(c.Annotations).To(HaveKey(flotillav1.EndpointServingAnnotation))
	g.Expect(gated(c)).To(BeFalse())
}

// For a KubeadmControlPlane the gate also waits for kubeadm init to have uploaded kubeadm-config,
// which KubeadmControlPlane reads right after the cluster cache connects.
func TestEndpointGateWaitsForKubeadmConfigOfAKubeadmControlPlane(t *testing.T) {
	g := NewWithT(t)
	s, err := scheme.New()
	g.Expect(err).NotTo(HaveOccurred())
	c := gateCluster("PacketCluster", "127.40.0.1:6443", true, false, nil)
	c.Spec.ControlPlaneRef = clusterv1.ContractVersionedObjectReference{APIGroup: kubeadmcontrolplanev1.GroupVersion.Group, Kind: "KubeadmControlPlane", Name: "p1"}
	kc := fake.NewClientBuilder().WithScheme(s).WithObjects(c).Build()
	uploaded := false
	gate := &endpointGate{
		client: kc,
		probe:  func(context.Context, string) int { return http.StatusOK },
		kubeadmConfigUploaded: func(_ context.Context, cluster *clusterv1.Cluster) bool {
			g.Expect(cluster.Name).To(Equal("p1"))
			return uploaded
		},
	}
	req := ctrl.Request{NamespacedName: ctrlclient.ObjectKeyFromObject(c)}

	res, err := gate.Reconcile(t.Context(), req)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.RequeueAfter).To(Equal(gateProbeInterval), "/readyz answers, kubeadm-config is not there yet")
	g.Expect(kc.Get(t.Context(), req.NamespacedName, c)).To(Succeed())
	g.Expect(gated(c)).To(BeTrue())

	uploaded = true
	res, err = gate.Reconcile(t.Context(), req)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.RequeueAfter).To(Equal(time.Duration(0)))
	g.Expect(kc.Get(t.Context(), req.NamespacedName, c)).To(Succeed())
	g.Expect(gated(c)).To(BeFalse())
}
