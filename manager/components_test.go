package manager

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/flotilla-dev/flotilla/infrastructure/providers"
)

func TestSelectComponents(t *testing.T) {
	noop := func(context.Context, ctrl.Manager, Deps) error { return nil }
	available := []Component{{Name: "capi", Setup: noop}, {Name: "local", Setup: noop}, {Name: "cluster", Setup: noop}}

	tests := []struct {
		name    string
		names   []string
		want    []string
		wantID  string
		wantErr string
	}{
		{name: "no names select every component", want: []string{"capi", "local", "cluster"}, wantID: "flotilla-manager"},
		{name: "all selects every component", names: []string{"all"}, want: []string{"capi", "local", "cluster"}, wantID: "flotilla-manager"},
		{name: "a subset keeps the setup order and names the manager after it", names: []string{"cluster", "capi"}, want: []string{"capi", "cluster"}, wantID: "flotilla-manager-capi-cluster"},
		{name: "an unknown name is an error listing the known ones", names: []string{"capi", "packet"}, wantErr: `unknown component(s) packet: known components are capi, local, cluster (or "all")`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := selectComponents(available, tt.names)
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(tt.wantErr))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			var names []string
			for _, c := range got {
				names = append(names, c.Name)
			}
			g.Expect(names).To(Equal(tt.want))
			g.Expect(managerID(available, got)).To(Equal(tt.wantID))
		})
	}
}

func TestWebhookConfigurationsKeepOnlyServedPathsAndCallThemByURL(t *testing.T) {
	g := NewWithT(t)
	service := func(path string) admissionregistrationv1.WebhookClientConfig {
		return admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Namespace: "system", Name: "webhook-service", Path: ptr.To(path)}}
	}
	mutating := []*admissionregistrationv1.MutatingWebhookConfiguration{{Webhooks: []admissionregistrationv1.MutatingWebhook{
		{Name: "served.example.com", ClientConfig: service("/mutate-served")},
		{Name: "unserved.example.com", ClientConfig: service("/mutate-unserved")},
	}}}
	validating := []*admissionregistrationv1.ValidatingWebhookConfiguration{{Webhooks: []admissionregistrationv1.ValidatingWebhook{
		{Name: "unserved.example.com", ClientConfig: service("/validate-unserved")},
	}}}
	served := func(path string) bool { return path == "/mutate-served" }

	m, v := webhookConfigurations("flotilla-manager", "https://127.0.0.1:9443", []byte("CA"), served, mutating, validating)

	g.Expect(m.Name).To(Equal("flotilla-manager"))
	g.Expect(m.Webhooks).To(HaveLen(1))
	g.Expect(m.Webhooks[0].Name).To(Equal("served.example.com"))
	g.Expect(m.Webhooks[0].ClientConfig.Service).To(BeNil())
	g.Expect(m.Webhooks[0].ClientConfig.URL).To(HaveValue(Equal("https://127.0.0.1:9443/mutate-served")))
	g.Expect(m.Webhooks[0].ClientConfig.CABundle).To(Equal([]byte("CA")))
	g.Expect(v.Name).To(Equal("flotilla-manager"))
	g.Expect(v.Webhooks).To(BeEmpty(), "nothing validating is served, so the configuration is to be deleted")
	// The generated configurations are left as they were.
	g.Expect(mutating[0].Webhooks[0].ClientConfig.Service).NotTo(BeNil())
}

func TestEveryProviderOfTheRegistryIsAComponent(t *testing.T) {
	g := NewWithT(t)
	var names []string
	for _, c := range Components() {
		names = append(names, c.Name)
	}
	want := []string{"capi"}
	for _, p := range providers.All() {
		want = append(want, p.Name)
	}
	g.Expect(names[:len(want)]).To(Equal(want), "Cluster API's component, then one per provider, named after it")
	for _, c := range Components() {
		g.Expect(c.Setup).NotTo(BeNil(), "component %s has no Setup (a provider missing from providerSetups?)", c.Name)
	}
	g.Expect(names).To(HaveLen(len(want)+7), "and the seven others: inmemory, cluster, gitops, kubeconfigaccess, addons, packages, kubeadm")
}
