package devicesim

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"
)

// The kubeadm configuration a device reads from its --config file (kubeadm.k8s.io v1beta3 or
// v1beta4): only the fields the simulation acts on.

// clusterConfiguration is kubeadm's ClusterConfiguration.
type clusterConfiguration struct {
	ControlPlaneEndpoint string `json:"controlPlaneEndpoint"`
	KubernetesVersion    string `json:"kubernetesVersion"`
	ClusterName          string `json:"clusterName"`
	Networking           struct {
		ServiceSubnet string `json:"serviceSubnet"`
	} `json:"networking"`
}

// nodeRegistration is kubeadm's NodeRegistrationOptions.
type nodeRegistration struct {
	Name string `json:"name"`
	// KubeletExtraArgs is a list of {name, value} (v1beta4) or a map (v1beta3).
	KubeletExtraArgs json.RawMessage `json:"kubeletExtraArgs"`
	// Taints nil means kubeadm's default (the control plane taint on control plane nodes);
	// empty means none.
	Taints *[]taint `json:"taints"`
}

type taint struct {
	Key    string `json:"key"`
	Value  string `json:"value,omitempty"`
	Effect string `json:"effect"`
}

// joinConfiguration is kubeadm's JoinConfiguration.
type joinConfiguration struct {
	NodeRegistration nodeRegistration `json:"nodeRegistration"`
	Discovery        struct {
		BootstrapToken *struct {
			APIServerEndpoint        string   `json:"apiServerEndpoint"`
			Token                    string   `json:"token"`
			CACertHashes             []string `json:"caCertHashes"`
			UnsafeSkipCAVerification bool     `json:"unsafeSkipCAVerification"`
		} `json:"bootstrapToken"`
	} `json:"discovery"`
	ControlPlane *struct{} `json:"controlPlane"`
}

// kubeadmConfig is the --config file: its documents by kind, and the ClusterConfiguration
// document as written.
type kubeadmConfig struct {
	cluster          *clusterConfiguration
	clusterDocument  string
	initRegistration *nodeRegistration
	join             *joinConfiguration
}

var documentSeparator = regexp.MustCompile(`(?m)^---\s*$`)

// parseKubeadmConfig reads a kubeadm --config file of several YAML documents.
func parseKubeadmConfig(data []byte) (*kubeadmConfig, error) {
	out := &kubeadmConfig{}
	for _, doc := range documentSeparator.Split(string(data), -1) {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		var meta struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			return nil, fmt.Errorf("parsing a kubeadm config document: %w", err)
		}
		if !strings.HasPrefix(meta.APIVersion, "kubeadm.k8s.io/") {
			continue // KubeletConfiguration, KubeProxyConfiguration...
		}
		var err error
		switch meta.Kind {
		case "ClusterConfiguration":
			out.cluster, out.clusterDocument = &clusterConfiguration{}, strings.TrimSpace(doc)+"\n"
			err = yaml.Unmarshal([]byte(doc), out.cluster)
		case "InitConfiguration":
			var init struct {
				NodeRegistration nodeRegistration `json:"nodeRegistration"`
			}
			err = yaml.Unmarshal([]byte(doc), &init)
			out.initRegistration = &init.NodeRegistration
		case "JoinConfiguration":
			out.join = &joinConfiguration{}
			err = yaml.Unmarshal([]byte(doc), out.join)
		}
		if err != nil {
			return nil, fmt.Errorf("parsing kubeadm's %s: %w", meta.Kind, err)
		}
	}
	return out, nil
}

// kubeletArgs returns the kubelet's extra arguments by name.
func (n nodeRegistration) kubeletArgs() (map[string]string, error) {
	args := map[string]string{}
	if len(n.KubeletExtraArgs) == 0 || string(n.KubeletExtraArgs) == "null" {
		return args, nil
	}
	var list []struct{ Name, Value string }
	if err := json.Unmarshal(n.KubeletExtraArgs, &list); err == nil {
		for _, a := range list {
			args[a.Name] = a.Value
		}
		return args, nil
	}
	if err := json.Unmarshal(n.KubeletExtraArgs, &args); err != nil {
		return nil, fmt.Errorf("kubeletExtraArgs is neither a list of {name, value} nor a map: %w", err)
	}
	return args, nil
}

// splitEndpoint splits a host:port endpoint; the port is 6443 when it is left out.
func splitEndpoint(endpoint string) (string, int32, error) {
	if endpoint == "" {
		return "", 0, errors.New("no control plane endpoint")
	}
	host, portText, err := net.SplitHostPort(endpoint)
	if err != nil {
		return endpoint, 6443, nil //nolint:nilerr // a host without a port: kubeadm's default port
	}
	port, err := strconv.ParseInt(portText, 10, 32)
	if err != nil || port <= 0 {
		return "", 0, fmt.Errorf("endpoint %q: invalid port", endpoint)
	}
	return host, int32(port), nil
}
