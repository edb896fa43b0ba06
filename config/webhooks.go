package config

import (
	"embed"
	"fmt"
	"path"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"sigs.k8s.io/yaml"
)

// webhookFS holds config/webhook: Flotilla's generated manifests.yaml (once a package declares a
// kubebuilder webhook marker) and Cluster API's in capi/.
//
//go:embed webhook
var webhookFS embed.FS

// WebhookSource names a set of admission webhook manifests.
type WebhookSource string

const (
	// FlotillaWebhooks are Flotilla's webhooks, generated from kubebuilder webhook markers.
	FlotillaWebhooks WebhookSource = "flotilla"
	// ClusterAPIWebhooks are the admission webhooks of Cluster API's core types.
	ClusterAPIWebhooks WebhookSource = "capi"
)

var webhookDirs = map[WebhookSource]string{
	FlotillaWebhooks:   "webhook",
	ClusterAPIWebhooks: "webhook/capi",
}

// WebhookConfigurations decodes the admission webhook configurations of sources (all of them
// when none is given). Each configuration is renamed "<source>-<generated name>" (with the file's
// name in between for a file other than manifests.yaml, such as Cluster API's
// kubeadm-bootstrap.yaml) so that those of different sources and files never collide;
// clientConfig names a Service, as generated.
func WebhookConfigurations(sources ...WebhookSource) ([]*admissionregistrationv1.MutatingWebhookConfiguration, []*admissionregistrationv1.ValidatingWebhookConfiguration, error) {
	if len(sources) == 0 {
		sources = []WebhookSource{FlotillaWebhooks, ClusterAPIWebhooks}
	}
	var (
		mutating   []*admissionregistrationv1.MutatingWebhookConfiguration
		validating []*admissionregistrationv1.ValidatingWebhookConfiguration
	)
	for _, source := range sources {
		dir, ok := webhookDirs[source]
		if !ok {
			return nil, nil, fmt.Errorf("unknown webhook source %q", source)
		}
		docs, err := readYAMLDocuments(webhookFS, dir)
		if err != nil {
			return nil, nil, err
		}
		for _, doc := range docs {
			var meta struct {
				Kind string `json:"kind"`
			}
			if err := yaml.Unmarshal(doc.body, &meta); err != nil {
				return nil, nil, fmt.Errorf("decoding %s: %w", doc.file, err)
			}
			switch meta.Kind {
			case "MutatingWebhookConfiguration":
				cfg := &admissionregistrationv1.MutatingWebhookConfiguration{}
				if err := yaml.UnmarshalStrict(doc.body, cfg); err != nil {
					return nil, nil, fmt.Errorf("decoding %s: %w", doc.file, err)
				}
				cfg.Name = configurationName(source, doc.file, cfg.Name)
				mutating = append(mutating, cfg)
			case "ValidatingWebhookConfiguration":
				cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{}
				if err := yaml.UnmarshalStrict(doc.body, cfg); err != nil {
					return nil, nil, fmt.Errorf("decoding %s: %w", doc.file, err)
				}
				cfg.Name = configurationName(source, doc.file, cfg.Name)
				validating = append(validating, cfg)
			default:
				return nil, nil, fmt.Errorf("decoding %s: unexpected kind %q in a webhook manifest", doc.file, meta.Kind)
			}
		}
	}
	return mutating, validating, nil
}

// configurationName is the name WebhookConfigurations gives a configuration named name in file.
func configurationName(source WebhookSource, file, name string) string {
	if stem := strings.TrimSuffix(path.Base(file), ".yaml"); stem != "manifests" {
		return string(source) + "-" + stem + "-" + name
	}
	return string(source) + "-" + name
}
