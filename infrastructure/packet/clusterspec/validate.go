package clusterspec

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"golang.org/x/crypto/ssh"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	infrav1 "github.com/flotilla-dev/flotilla/api/infrastructure/v1alpha1"
	"github.com/flotilla-dev/flotilla/infrastructure/packet/metal"
	"github.com/flotilla-dev/flotilla/pkg/fielderrors"
)

// The rules of the Packet provider's configs and identities, each a pure function that returns
// a field.ErrorList whose paths start at spec: the admission webhooks (cluster/webhooks) and the
// CLI's spec files (cluster/spec) run them, through the provider registry
// (infrastructure/providers).

var spec = field.NewPath("spec")

// Packet values the Metal API accepts.
var (
	metroRE    = regexp.MustCompile(`^[a-z]{2}$`)
	facilityRE = regexp.MustCompile(`^[a-z0-9]+$`)
)

// ValidateDatacenterConfig checks a PacketDatacenterConfig, defaulted as its schema
// defaults it: identityRef, when set, names a PacketClusterIdentity; projectID is set, metro is
// a metro code and facility a facility code, vipManager is KUBE_VIP or CPEM. Whether the
// identity allows the config's namespace needs a lookup: the webhook checks it, and the
// provider again before every use.
func ValidateDatacenterConfig(dc *infrav1.PacketDatacenterConfig) field.ErrorList {
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
		errs = append(errs, fielderrors.NotSupported(spec.Child("vipManager"), s.VIPManager, fmt.Sprintf("%q is not a VIP manager; use %s or %s",
			s.VIPManager, infrav1.VIPManagerKubeVIP, infrav1.VIPManagerCPEM)))
	}
	return errs
}

// ValidateClusterIdentity checks a PacketClusterIdentity, defaulted as its schema defaults
// it: apiURL keeps the key off the network in the clear (https, or http to a loopback address;
// metal.CheckBaseURL), credentialsSecretName is a Secret name, and allowedNamespaces names
// namespaces and holds a valid label selector.
func ValidateClusterIdentity(id *infrav1.PacketClusterIdentity) field.ErrorList {
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

// ValidateMachineConfig checks a PacketMachineConfig, defaulted as its schema defaults
// it: plan is set, billingCycle is one the Metal API knows, no tag starts with the provider's
// own prefix "flotilla:" (the provider finds a cluster's devices by such tags: a device tagged
// as another cluster's machine would be adopted, and deleted, as that machine's), and every
// sshAuthorizedKeys entry is an SSH public key (a private key pasted by mistake is refused
// without being echoed).
func ValidateMachineConfig(mc *infrav1.PacketMachineConfig) field.ErrorList {
	var errs field.ErrorList
	s := mc.Spec
	if s.Plan == "" {
		errs = append(errs, field.Required(spec.Child("plan"), "name the device type, such as c3.small.x86"))
	}
	if s.BillingCycle != "" && !slices.Contains(billingCycles, s.BillingCycle) {
		errs = append(errs, fielderrors.NotSupported(spec.Child("billingCycle"), s.BillingCycle, fmt.Sprintf("%q is not a billing cycle; use one of %s",
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
