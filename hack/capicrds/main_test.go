package main

import (
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/yaml"
)

const twoVersions = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: machines.cluster.x-k8s.io
  labels:
    existing: kept
spec:
  group: cluster.x-k8s.io
  conversion:
    strategy: Webhook
  versions:
  - name: v1beta1
    served: true
    storage: false
  - name: v1beta2
    served: false
    storage: true
`

func TestReduceCRD(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    string
		wantErr string
	}{
		{
			name: "only the storage version stays, served, without the conversion stanza",
			in:   twoVersions,
			want: "v1beta2",
		},
		{
			name:    "a storage version other than the expected one is an error",
			in:      twoVersions,
			want:    "v1beta3",
			wantErr: "storage version is v1beta2, want v1beta3",
		},
		{
			name:    "a document that is not a CRD is an error",
			in:      "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n",
			want:    "v1beta2",
			wantErr: "kind is ConfigMap, want CustomResourceDefinition",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			out, err := reduceCRD([]byte(tt.in), tt.want, map[string]string{"added": "yes"})
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			var crd struct {
				Metadata struct {
					Labels map[string]string `json:"labels"`
				} `json:"metadata"`
				Spec struct {
					Conversion any `json:"conversion"`
					Versions   []struct {
						Name    string `json:"name"`
						Served  bool   `json:"served"`
						Storage bool   `json:"storage"`
					} `json:"versions"`
				} `json:"spec"`
			}
			g.Expect(yaml.Unmarshal(out, &crd)).To(Succeed())
			g.Expect(crd.Spec.Conversion).To(BeNil())
			g.Expect(crd.Spec.Versions).To(HaveLen(1))
			g.Expect(crd.Spec.Versions[0].Name).To(Equal("v1beta2"))
			g.Expect(crd.Spec.Versions[0].Served).To(BeTrue())
			g.Expect(crd.Metadata.Labels).To(Equal(map[string]string{"existing": "kept", "added": "yes"}))
		})
	}
}
