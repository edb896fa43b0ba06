package validation

import (
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"golang.org/x/crypto/ssh"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	infrav1 "github.com/flotilla-dev/flotilla/api/infrastructure/v1alpha1"
	"github.com/flotilla-dev/flotilla/pkg/nodenet"
)

// The rules of the provider configs.

// ValidateLocalDatacenterConfig checks a LocalDatacenterConfig: nodeNetwork, when set, is a
// private IPv4 range of /16 to /28 written with its first address, and imageMirror, when set, a
// loopback host:port (the nodes reach it through their gateway, which forwards to loopback).
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
		host, port, err := net.SplitHostPort(dc.Spec.ImageMirror)
		if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() || port == "" {
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
// defaults it: apiURL is an http(s) URL with a host, projectID is set, metro is a metro code
// and facility a facility code, vipManager is KUBE_VIP or CPEM, and credentialsSecretName,
// when set, is a Secret name.
func ValidatePacketDatacenterConfig(dc *infrav1.PacketDatacenterConfig) field.ErrorList {
	var errs field.ErrorList
	s := dc.Spec
	if u, err := url.Parse(s.APIURL); s.APIURL != "" && (err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "") {
		errs = append(errs, field.Invalid(spec.Child("apiURL"), s.APIURL, fmt.Sprintf(
			"%q is not an http(s) URL of the Metal API, such as %s", s.APIURL, infrav1.DefaultPacketAPIURL)))
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
	if name := s.CredentialsSecretName; name != "" && len(validation.IsDNS1123Subdomain(name)) > 0 {
		errs = append(errs, field.Invalid(spec.Child("credentialsSecretName"), name, fmt.Sprintf(
			"%q is not a Secret name: use lowercase letters, digits, '-' and '.'", name)))
	}
	return errs
}

// billingCycles are the billing cycles of a Metal device.
var billingCycles = []string{"hourly", "daily", "monthly", "yearly"}

// ValidatePacketMachineConfig checks a PacketMachineConfig, defaulted as its schema defaults
// it: plan is set, billingCycle is one the Metal API knows, and every sshAuthorizedKeys entry is
// an SSH public key (a private key pasted by mistake is refused without being echoed).
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
