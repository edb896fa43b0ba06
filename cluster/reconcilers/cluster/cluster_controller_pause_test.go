package cluster

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	clusterctlv1 "sigs.k8s.io/cluster-api/cmd/clusterctl/api/v1alpha3"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
)

func TestPauseStateOf(t *testing.T) {
	annotated := func(keys ...string) func(*flotillav1.Cluster) {
		return func(c *flotillav1.Cluster) {
			c.Annotations = map[string]string{}
			for _, k := range keys {
				c.Annotations[k] = ""
			}
		}
	}
	capi := func(paused bool, annotations ...string) *clusterv1.Cluster {
		capi := &clusterv1.Cluster{}
		if paused {
			capi.Spec.Paused = ptr.To(true)
		}
		capi.Annotations = map[string]string{}
		for _, a := range annotations {
			capi.Annotations[a] = ""
		}
		return capi
	}
	tests := []struct {
		name string
		spec func(*flotillav1.Cluster)
		capi *clusterv1.Cluster
		want pauseState
	}{
		{name: "a cluster without annotations is reconciled", capi: capi(false), want: notPaused},
		{name: "a new cluster without a CAPI Cluster is reconciled", capi: nil, want: notPaused},
		{
			name: "a cluster whose CAPI Cluster someone paused is reconciled until the apply finds the pause",
			capi: capi(true), want: notPaused,
		},
		{name: "the paused annotation pauses the cluster", spec: annotated(clusterv1.PausedAnnotation), capi: capi(false), want: pausedByAnnotation},
		{
			name: "the paused annotation wins over a hold",
			spec: annotated(clusterv1.PausedAnnotation, flotillav1.CAPIPausedAnnotation), capi: capi(true), want: pausedByAnnotation,
		},
		{name: "a holding cluster keeps holding while its CAPI Cluster is paused", spec: annotated(flotillav1.CAPIPausedAnnotation), capi: capi(true), want: pausedByCAPI},
		{
			name: "a holding cluster keeps holding while its CAPI Cluster has the paused annotation",
			spec: annotated(flotillav1.CAPIPausedAnnotation), capi: capi(false, clusterv1.PausedAnnotation), want: pausedByCAPI,
		},
		{
			name: "a holding cluster does not recreate a CAPI Cluster a move deleted",
			spec: annotated(flotillav1.CAPIPausedAnnotation), capi: nil, want: pausedByCAPI,
		},
		{
			// clusterctl's JSON patch replaces every annotation with delete-for-move, capi-paused
			// included, one request before it deletes the object: recreating the CAPI Cluster
			// there restarted the moved cluster's processes from the bootstrap cluster.
			name: "a cluster clusterctl move is about to delete does not recreate its CAPI Cluster",
			spec: annotated(clusterctlv1.DeleteForMoveAnnotation), capi: nil, want: pausedByCAPI,
		},
		{
			name: "a cluster the CLI is about to move holds, its CAPI Cluster not paused yet",
			spec: annotated(flotillav1.MovingAnnotation), capi: capi(false), want: pausedForMove,
		},
		{
			name: "a holding cluster resumes once its CAPI Cluster exists unpaused",
			spec: annotated(flotillav1.CAPIPausedAnnotation), capi: capi(false), want: notPaused,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			c := testCluster()
			if tt.spec != nil {
				tt.spec(c)
			}
			g.Expect(pauseStateOf(c, tt.capi)).To(Equal(tt.want))
		})
	}
}
