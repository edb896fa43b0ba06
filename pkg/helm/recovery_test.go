package helm

import (
	"testing"

	. "github.com/onsi/gomega"
	rcommon "helm.sh/helm/v4/pkg/release/common"
	corev1 "k8s.io/api/core/v1"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/pkg/registryconn"
)

// TestReleasesLeftStuckByADeadProcessAreRecovered leaves a release in each state a killed
// process can leave it in (Helm's record says pending or uninstalling, the objects may be half
// applied) and checks that the next InstallOrUpgrade converges.
func TestReleasesLeftStuckByADeadProcessAreRecovered(t *testing.T) {
	ctx := testContext(t)
	helloChart("0.1.0").push(t, "recovery")
	chartRef := ChartRef{RepoURL: "oci://" + ociHost + "/recovery/hello", Version: "0.1.0"}

	tests := []struct {
		name string
		// upgrades before the process dies.
		upgrades int
		status   rcommon.Status
		// objectsLost deletes the release's ConfigMap, as if the process died before applying it.
		objectsLost bool
		wantAction  Action
		wantRev     int
	}{
		{name: "a first install left pending-install before anything was applied is installed again as revision 1", status: rcommon.StatusPendingInstall, objectsLost: true, wantAction: ActionInstalled, wantRev: 1},
		{name: "a first install left pending-install after its objects were applied adopts them as revision 1", status: rcommon.StatusPendingInstall, wantAction: ActionInstalled, wantRev: 1},
		{name: "a first install that failed (its API server went away) is installed again as revision 1", status: rcommon.StatusFailed, wantAction: ActionInstalled, wantRev: 1},
		{name: "an upgrade left pending-upgrade", upgrades: 1, status: rcommon.StatusPendingUpgrade, wantAction: ActionUpgraded, wantRev: 3},
		{name: "a rollback left pending-rollback", upgrades: 1, status: rcommon.StatusPendingRollback, wantAction: ActionUpgraded, wantRev: 3},
		{name: "an uninstall left uninstalling", status: rcommon.StatusUninstalling, objectsLost: true, wantAction: ActionInstalled, wantRev: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			ns := env.NewNamespace(t)
			e := newEngine(t)
			rel := Release{Name: "stuck", Namespace: ns, Chart: chartRef, Registry: registryconn.Config{PlainHTTP: true},
				Values: map[string]any{"greeting": "v0"}}
			_, err := e.InstallOrUpgrade(ctx, cluster, rel)
			g.Expect(err).NotTo(HaveOccurred())
			for i := range tt.upgrades {
				rel.Values = map[string]any{"greeting": "v" + string(rune('1'+i))}
				_, err := e.InstallOrUpgrade(ctx, cluster, rel)
				g.Expect(err).NotTo(HaveOccurred())
			}

			// The process dies: its last record keeps the in-between status.
			ac, err := e.actionConfig(ctx, cluster, ns)
			g.Expect(err).NotTo(HaveOccurred())
			last, err := lastRelease(ac, "stuck")
			g.Expect(err).NotTo(HaveOccurred())
			last.SetStatus(tt.status, "the process was killed")
			g.Expect(ac.Releases.Update(last)).To(Succeed())
			if tt.objectsLost {
				cm := &corev1.ConfigMap{}
				cm.Namespace, cm.Name = ns, "stuck-config"
				g.Expect(ctrlclient.IgnoreNotFound(env.Client.Delete(ctx, cm))).To(Succeed())
			}

			// Same inputs again: the engine does not give up on the stuck record.
			rel.Values = map[string]any{"greeting": "after"}
			res, err := e.InstallOrUpgrade(ctx, cluster, rel)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(res.Action).To(Equal(tt.wantAction))
			g.Expect(res.Revision).To(Equal(tt.wantRev))
			g.Expect(res.Status).To(Equal("deployed"))
			g.Expect(e.Stats().Recoveries).To(Equal(int64(1)))
			g.Expect(configMapData(g, ctx, ns, "stuck-config")).To(HaveKeyWithValue("greeting", "after"))

			// And it settles: the next call changes nothing.
			res, err = e.InstallOrUpgrade(ctx, cluster, rel)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(res.Action).To(Equal(ActionUnchanged))
		})
	}
}
