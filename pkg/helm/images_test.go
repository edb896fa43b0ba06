package helm

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/flotilla-dev/flotilla/pkg/registryconn"
)

// digestX is a digest an image is pinned by.
var digestX = strings.Repeat("a", 64)

// imagesChart runs images in a Deployment (with an init container, its image from values), a
// CronJob, a pre-delete hook Job and a custom resource that embeds a Pod template; a ConfigMap
// holds a string that only looks like an image.
func imagesChart() testChart {
	return testChart{name: "images", version: "1.0.0", files: map[string]string{
		"Chart.yaml":  "apiVersion: v2\nname: images\nversion: 1.0.0\nkubeVersion: \">=1.30.0-0\"\n",
		"values.yaml": "image: {repository: ghcr.io/example/web, tag: \"2.0\"}\nsidecar: true\n",
		"templates/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      initContainers: [{name: init, image: "busybox:1.37"}]
      containers:
      - {name: web, image: "{{ .Values.image.repository }}:{{ .Values.image.tag }}"}
      {{- if .Values.sidecar }}
      - {name: sidecar, image: "registry.k8s.io/pause:3.10"}
      {{- end }}
`,
		"templates/cronjob.yaml": `apiVersion: batch/v1
kind: CronJob
metadata: {name: nightly}
spec:
  schedule: "@daily"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: Never
          containers: [{name: run, image: "ghcr.io/example/web:2.0"}]
`,
		"templates/hook.yaml": `apiVersion: batch/v1
kind: Job
metadata:
  name: cleanup
  annotations: {"helm.sh/hook": pre-delete}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: cleanup, image: "ghcr.io/example/cleanup@sha256:` + digestX + `"}]
`,
		"templates/custom.yaml": `apiVersion: example.com/v1
kind: Runner
metadata: {name: runner}
spec:
  podTemplate:
    spec:
      containers: [{name: r, image: "quay.io/example/runner:1"}]
`,
		"templates/configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {image: \"not-an-image:1\"}\n",
	}}
}

// TestImagesAreThoseOfEveryPodTemplateAndHook renders the chart with its default values and with
// values that change them, and finds the images of every Pod template, hooks included, once each;
// the chart is rendered for the Kubernetes version asked for.
func TestImagesAreThoseOfEveryPodTemplateAndHook(t *testing.T) {
	g := NewWithT(t)
	ctx := testContext(t)
	imagesChart().push(t, "images")
	e := newEngine(t)
	ref := ChartRef{RepoURL: "oci://" + ociHost + "/images/images", Version: "1.0.0"}
	plain := registryconn.Config{PlainHTTP: true}

	images, err := e.Images(ctx, Release{Chart: ref, Registry: plain}, "v1.36.0")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(images).To(Equal([]string{
		"busybox:1.37",
		"ghcr.io/example/cleanup@sha256:" + digestX,
		"ghcr.io/example/web:2.0",
		"quay.io/example/runner:1",
		"registry.k8s.io/pause:3.10",
	}))

	images, err = e.Images(ctx, Release{Chart: ref, Registry: plain, Values: map[string]any{"sidecar": false, "image": map[string]any{"tag": "3.0"}}}, "v1.35.4")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(images).To(Equal([]string{
		"busybox:1.37",
		"ghcr.io/example/cleanup@sha256:" + digestX,
		"ghcr.io/example/web:2.0",
		"ghcr.io/example/web:3.0",
		"quay.io/example/runner:1",
	}))

	_, err = e.Images(ctx, Release{Chart: ref, Registry: plain}, "v1.29.0")
	g.Expect(err).To(MatchError(ContainSubstring("incompatible with Kubernetes v1.29.0")), "rendered for the cluster version asked for")
}
