package validation

import (
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strings"

	"golang.org/x/crypto/ssh"
	corev1 "k8s.io/api/core/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	infrav1 "github.com/flotilla-dev/flotilla/api/infrastructure/v1alpha1"
	"github.com/flotilla-dev/flotilla/infrastructure/packet/metal"
	"github.com/flotilla-dev/flotilla/pkg/nodenet"
)

// The rules of the provider configs.

// ValidateLocalDatacenterConfig checks a LocalDatacenterConfig: nodeNetwork, when set, is a
// private IPv4 range of /16 to /28 written with its first address, and imageMirror, when set,
// 127.0.0.1:<port> or localhost:<port> (nodenet.LoopbackPort: the nodes reach it through their
// gateway, which forwards to loopback).
// Whether this machine already uses the range is checked where it is known: at create by the
// CLI, and by the LocalControlPlane reconciler.
func ValidateLocalDatacenterConfig(dc *infrav1.LocalDatacenterConfig) field.ErrorList {
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

// ValidateLocalMachineConfig checks a LocalMachineConfig: its capacity names resources a Node
// can report (cpu, memory, pods, ephemeral-storage, hugepages-<size>, or an extended resource
// such as example.com/gpu) with quantities that are not negative.
func ValidateLocalMachineConfig(mc *infrav1.LocalMachineConfig) field.ErrorList {
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

// Packet values the Metal API accepts.
var (
	metroRE    = regexp.MustCompile(`^[a-z]{2}$`)
	facilityRE = regexp.MustCompile(`^[a-z0-9]+$`)
)

// ValidatePacketDatacenterConfig checks a PacketDatacenterConfig, defaulted as its schema
// defaults it: identityRef, when set, names a PacketClusterIdentity; projectID is set, metro is
// a metro code and facility a facility code, vipManager is KUBE_VIP or CPEM. Whether the
// identity allows the config's namespace needs a lookup: the webhook checks it, and the
// provider again before every use.
func ValidatePacketDatacenterConfig(dc *infrav1.PacketDatacenterConfig) field.ErrorList {
	var errs field.ErrorList
	s := dc.Spec
	if ref := s.IdentityRef; ref != nil && len(validation.IsDNS1123Subdomain(ref.Name)) > 0 {
		errs = append(errs, field.Invalid(spec.Child("identityRef", "name"), ref.Name, fmt.Sprintf(
			"%q is not a PacketClusterIdentity name: use lowercase letters, digits, '-' and '.', or leave identityRef out to use %q",
			ref.Name, infrav1.DefaultPacketClusterIdentity)))
	}
	if s.ProjectID == "" {
		errs = append(errs, field.Required(spec.Child("projectID"), "set the ID of the Metal project that owns the devices"))
	}
	switch {
	case s.Metro == "":
		errs = append(errs, field.Required(spec.Child("metro"), "set the metro code devices are created in, such as da"))
	case !metroRE.MatchString(s.Metro):
		errs = append(errs, field.Invalid(spec.Child("metro"), s.Metro, fmt.Sprintf("%q is not a metro code: use two lowercase letters, such as da", s.Metro)))
	}
	if s.Facility != "" && !facilityRE.MatchString(s.Facility) {
		errs = append(errs, field.Invalid(spec.Child("facility"), s.Facility, fmt.Sprintf("%q is not a facility code: use lowercase letters and digits, such as da11", s.Facility)))
	}
	if s.VIPManager != "" && s.VIPManager != infrav1.VIPManagerKubeVIP && s.VIPManager != infrav1.VIPManagerCPEM {
		errs = append(errs, notSupported(spec.Child("vipManager"), s.VIPManager, fmt.Sprintf("%q is not a VIP manager; use %s or %s",
			s.VIPManager, infrav1.VIPManagerKubeVIP, infrav1.VIPManagerCPEM)))
	}
	return errs
}

// ValidatePacketClusterIdentity checks a PacketClusterIdentity, defaulted as its schema defaults
// it: apiURL keeps the key off the network in the clear (https, or http to a loopback address;
// metal.CheckBaseURL), credentialsSecretName is a Secret name, and allowedNamespaces names
// namespaces and holds a valid label selector.
func ValidatePacketClusterIdentity(id *infrav1.PacketClusterIdentity) field.ErrorList {
	var errs field.ErrorList
	s := id.Spec
	if s.APIURL != "" {
		if err := metal.CheckBaseURL(s.APIURL); err != nil {
			errs = append(errs, field.Invalid(spec.Child("apiURL"), field.OmitValueType{}, err.Error()))
		}
	}
	switch name := s.CredentialsSecretName; {
	case name == "":
		errs = append(errs, field.Required(spec.Child("credentialsSecretName"),
			fmt.Sprintf("name the Secret in %s whose %q holds the Metal API key", infrav1.PacketCredentialsNamespace, infrav1.PacketAPIKeySecretKey)))
	case len(validation.IsDNS1123Subdomain(name)) > 0:
		errs = append(errs, field.Invalid(spec.Child("credentialsSecretName"), name, fmt.Sprintf(
			"%q is not a Secret name: use lowercase letters, digits, '-' and '.'", name)))
	}
	if allowed := s.AllowedNamespaces; allowed != nil {
		path := spec.Child("allowedNamespaces")
		for i, ns := range allowed.List {
			if len(validation.IsDNS1123Label(ns)) > 0 {
				errs = append(errs, field.Invalid(path.Child("list").Index(i), ns, fmt.Sprintf("%q is not a namespace name", ns)))
			}
		}
		if allowed.Selector != nil {
			errs = append(errs, metav1validation.ValidateLabelSelector(allowed.Selector,
				metav1validation.LabelSelectorValidationOptions{}, path.Child("selector"))...)
		}
	}
	return errs
}

// billingCycles are the billing cycles of a Metal device.
var billingCycles = []string{"hourly", "daily", "monthly", "yearly"}

// ValidatePacketMachineConfig checks a PacketMachineConfig, defaulted as its schema defaults
// it: plan is set, billingCycle is one the Metal API knows, no tag starts with the provider's
// own prefix "flotilla:" (the provider finds a cluster's devices by such tags: a device tagged
// as another cluster's machine would be adopted, and deleted, as that machine's), and every
// sshAuthorizedKeys entry is an SSH public key (a private key pasted by mistake is refused
// without being echoed).
func ValidatePacketMachineConfig(mc *infrav1.PacketMachineConfig) field.ErrorList {
	var errs field.ErrorList
	s := mc.Spec
	if s.Plan == "" {
		errs = append(errs, field.Required(spec.Child("plan"), "name the device type, such as c3.small.x86"))
	}
	if s.BillingCycle != "" && !slices.Contains(billingCycles, s.BillingCycle) {
		errs = append(errs, notSupported(spec.Child("billingCycle"), s.BillingCycle, fmt.Sprintf("%q is not a billing cycle; use one of %s",
			s.BillingCycle, strings.Join(billingCycles, ", "))))
	}
	for i, tag := range s.Tags {
		if strings.HasPrefix(tag, infrav1.PacketTagPrefix) {
			errs = append(errs, field.Invalid(spec.Child("tags").Index(i), tag, fmt.Sprintf(
				"tags starting with %q are the provider's own, which it finds a cluster's devices by; choose another tag", infrav1.PacketTagPrefix)))
		}
	}
	for i, key := range s.SSHAuthorizedKeys {
		path := spec.Child("sshAuthorizedKeys").Index(i)
		switch _, _, _, _, err := ssh.ParseAuthorizedKey([]byte(key)); {
		case strings.Contains(key, "PRIVATE KEY"):
			errs = append(errs, field.Invalid(path, field.OmitValueType{},
				"this is a private key: give the public key (the .pub file, such as ssh-ed25519 AAAA... you@example.com), and keep the private key secret"))
		case err != nil:
			errs = append(errs, field.Invalid(path, field.OmitValueType{},
				"not an SSH public key in authorized_keys form, such as ssh-ed25519 AAAA... you@example.com"))
		}
	}
	return errs
}
