package clusterspec

import (
	"fmt"
	"net/netip"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	infrav1 "github.com/flotilla-dev/flotilla/api/infrastructure/v1alpha1"
	"github.com/flotilla-dev/flotilla/pkg/nodenet"
)

// The rules of the local provider's configs, each a pure function that returns a
// field.ErrorList whose paths start at spec: the admission webhooks (cluster/webhooks) and the
// CLI's spec files (cluster/spec) run them, through the provider registry
// (infrastructure/providers).

var spec = field.NewPath("spec")

// ValidateDatacenterConfig checks a LocalDatacenterConfig: nodeNetwork, when set, is a
// private IPv4 range of /16 to /28 written with its first address, and imageMirror, when set,
// 127.0.0.1:<port> or localhost:<port> (nodenet.LoopbackPort: the nodes reach it through their
// gateway, which forwards to loopback).
// Whether this machine already uses the range is checked where it is known: at create by the
// CLI, and by the LocalControlPlane reconciler.
func ValidateDatacenterConfig(dc *infrav1.LocalDatacenterConfig) field.ErrorList {
	var errs field.ErrorList
	if dc.Spec.NodeNetwork != "" {
		network, _ := netip.ParsePrefix(dc.Spec.NodeNetwork)
		if err := nodenet.ValidateNetwork(network); err != nil {
			errs = append(errs, field.Invalid(spec.Child("nodeNetwork"), dc.Spec.NodeNetwork, err.Error()))
		}
	}
	if dc.Spec.ImageMirror != "" {
		if _, err := nodenet.LoopbackPort(dc.Spec.ImageMirror); err != nil {
			errs = append(errs, field.Invalid(spec.Child("imageMirror"), dc.Spec.ImageMirror,
				"want the loopback host:port of a registry on this machine, such as "+infrav1.DefaultImageMirror+" (flotilla registry start)"))
		}
	}
	return errs
}

// ValidateMachineConfig checks a LocalMachineConfig: its capacity names resources a Node
// can report (cpu, memory, pods, ephemeral-storage, hugepages-<size>, or an extended resource
// such as example.com/gpu) with quantities that are not negative.
func ValidateMachineConfig(mc *infrav1.LocalMachineConfig) field.ErrorList {
	var errs field.ErrorList
	path := spec.Child("capacity")
	for name, quantity := range mc.Spec.Capacity {
		if !nodeResourceName(name) {
			errs = append(errs, field.Invalid(path.Key(string(name)), string(name), fmt.Sprintf(
				"%q is not a resource a Node reports; use cpu, memory, pods, ephemeral-storage, hugepages-<size>, or an extended resource such as example.com/gpu", name)))
			continue
		}
		if quantity.Sign() < 0 {
			errs = append(errs, field.Invalid(path.Key(string(name)), quantity.String(), fmt.Sprintf("%s is negative; use 0 or more", quantity.String())))
		}
	}
	return errs
}

// nodeResourceName: a standard resource of a Node, or an extended resource (a qualified name
// with a domain prefix), as the API server accepts in a Node's capacity.
func nodeResourceName(name corev1.ResourceName) bool {
	switch {
	case name == corev1.ResourceCPU, name == corev1.ResourceMemory, name == corev1.ResourcePods,
		name == corev1.ResourceEphemeralStorage:
		return true
	case strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix):
		return len(name) > len(corev1.ResourceHugePagesPrefix)
	default:
		return strings.Contains(string(name), "/") && len(validation.IsQualifiedName(string(name))) == 0
	}
}
