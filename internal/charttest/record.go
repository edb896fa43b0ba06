package charttest

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// GzipBombRecord is the data of a forged Helm release record (base64 of gzip, as Helm stores
// one) that inflates to size bytes of zeros (rounded down to MiB) from about size/1000 bytes:
// gzip members of 1 MiB of zeros one after the other (a gzip stream may hold several, and
// Helm's reader reads them all). 700 MiB fits in a Secret.
func GzipBombRecord(size int) []byte {
	var member bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&member, gzip.BestCompression) // a valid level: no error
	_, _ = zw.Write(make([]byte, 1<<20))                        // into a bytes.Buffer: no error
	_ = zw.Close()
	return []byte(base64.StdEncoding.EncodeToString(bytes.Repeat(member.Bytes(), size>>20)))
}

// ReleaseRecordSecret is a Secret that Helm reads as revision version of the deployed release
// name in namespace, holding the record data.
func ReleaseRecordSecret(namespace, name string, version int, data []byte) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("sh.helm.release.v1.%s.v%d", name, version), Namespace: namespace,
			Labels: map[string]string{"owner": "helm", "name": name, "status": "deployed", "version": fmt.Sprint(version)},
		},
		Type: "helm.sh/release.v1",
		Data: map[string][]byte{"release": data},
	}
}
