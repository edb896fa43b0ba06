package helm

import (
	"fmt"
	"slices"

	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"
	"sigs.k8s.io/yaml"
)

// containerLists are the fields of a Pod spec that list containers.
var containerLists = []string{"containers", "initContainers", "ephemeralContainers"}

// podImages returns the images that the Pod specs of manifests (YAML streams) name, each once,
// sorted. A Pod spec is found wherever it is (a Pod, a workload's template, a CronJob's job
// template, a custom resource that embeds one): any list of containers with an image.
func podImages(manifests ...string) ([]string, error) {
	var images []string
	for _, m := range manifests {
		for name, doc := range releaseutil.SplitManifests(m) {
			var obj any
			if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
				return nil, fmt.Errorf("reading rendered manifest %s: %w", name, err)
			}
			images = collectImages(obj, images)
		}
	}
	slices.Sort(images)
	return slices.Compact(images), nil
}

// collectImages appends the images of the container lists in v, at any depth.
func collectImages(v any, images []string) []string {
	switch v := v.(type) {
	case map[string]any:
		for key, field := range v {
			if list, ok := field.([]any); ok && slices.Contains(containerLists, key) {
				for _, c := range list {
					if c, ok := c.(map[string]any); ok {
						if image, ok := c["image"].(string); ok && image != "" {
							images = append(images, image)
						}
					}
				}
			}
			images = collectImages(field, images)
		}
	case []any:
		for _, item := range v {
			images = collectImages(item, images)
		}
	}
	return images
}
