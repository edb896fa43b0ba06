package fielderrors

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestNotSupportedSaysWhatToUse(t *testing.T) {
	g := NewWithT(t)
	err := NotSupported(field.NewPath("spec", "vipManager"), "MAGIC", `"MAGIC" is not a VIP manager; use KUBE_VIP or CPEM`)
	g.Expect(err.Type).To(Equal(field.ErrorTypeNotSupported))
	g.Expect(err.Field).To(Equal("spec.vipManager"))
	g.Expect(err.Error()).To(Equal(`spec.vipManager: Unsupported value: "MAGIC": "MAGIC" is not a VIP manager; use KUBE_VIP or CPEM`))
}
