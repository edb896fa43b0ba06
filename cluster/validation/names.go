package validation

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// MaxClusterNameLength bounds a Cluster's name, so that the names derived from it
// (<cluster>-<group>, <cluster>-kubeconfig, flotilla-packages-<cluster>) stay valid.
const MaxClusterNameLength = 40

// MaxWorkerNodeGroupNameLength bounds a worker node group's name (the CRD says so too).
const MaxWorkerNodeGroupNameLength = 40

// maxLabelValueLength bounds MachineDeployment names: CAPI uses them as label values.
const maxLabelValueLength = validation.LabelValueMaxLength

// DNSLabelProblem says why name is not a DNS label (RFC 1123) of at most maxLength characters,
// suggesting a fixed name when a simple fix makes one, or returns "" when it is one.
func DNSLabelProblem(name string, maxLength int) string {
	if len(name) <= maxLength && len(validation.IsDNS1123Label(name)) == 0 {
		return ""
	}
	msg := fmt.Sprintf("use at most %d lowercase letters, digits and '-', starting and ending with a letter or digit", maxLength)
	if fixed := suggestLabel(name, maxLength); fixed != "" && fixed != name {
		msg += fmt.Sprintf(", such as %q", fixed)
	}
	return msg
}

// suggestLabel turns name into a DNS label of at most maxLength characters if lowercasing,
// replacing '_', '.' and ' ' by '-' and dropping other characters does it, or returns "".
func suggestLabel(name string, maxLength int) string {
	fixed := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-':
			return r
		case r >= 'A' && r <= 'Z':
			return r - 'A' + 'a'
		case r == '_' || r == '.' || r == ' ':
			return '-'
		default:
			return -1
		}
	}, name)
	fixed = strings.Trim(fixed, "-")
	if len(fixed) > maxLength || len(validation.IsDNS1123Label(fixed)) > 0 {
		return ""
	}
	return fixed
}
