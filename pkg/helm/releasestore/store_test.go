package releasestore

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"runtime"
	"testing"

	. "github.com/onsi/gomega"
	ri "helm.sh/helm/v4/pkg/release"
	rcommon "helm.sh/helm/v4/pkg/release/common"
	release "helm.sh/helm/v4/pkg/release/v1"
	"helm.sh/helm/v4/pkg/storage/driver"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/flotilla-dev/flotilla/internal/charttest"
)

// helmRecord is the data of the release Secret that Helm's own Secrets driver writes for rel.
func helmRecord(t testing.TB, rel *release.Release) []byte {
	t.Helper()
	secrets := fake.NewClientset().CoreV1().Secrets("default")
	key := "sh.helm.release.v1." + rel.Name + ".v1"
	if err := driver.NewSecrets(secrets).Create(key, rel); err != nil {
		t.Fatal(err)
	}
	s, err := secrets.Get(context.Background(), key, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return s.Data["release"]
}

func sampleRelease() *release.Release {
	return &release.Release{Name: "web", Namespace: "apps", Version: 1, Manifest: "kind: ConfigMap\n",
		Info: &release.Info{Status: rcommon.StatusDeployed}}
}

func TestDecodeRelease(t *testing.T) {
	plainJSON, err := json.Marshal(sampleRelease())
	if err != nil {
		t.Fatal(err)
	}
	plain := []byte(base64.StdEncoding.EncodeToString(plainJSON))
	tests := []struct {
		name     string
		data     []byte
		limit    int
		wantName string
		tooLarge bool
	}{
		{name: "a record Helm's own driver wrote decodes", data: helmRecord(t, sampleRelease()), limit: MaxReleaseRecordSize, wantName: "web"},
		{name: "a record of an old Helm (JSON without gzip) decodes", data: plain, limit: MaxReleaseRecordSize, wantName: "web"},
		{name: "a record that decodes to exactly the limit decodes", data: plain, limit: len(plainJSON), wantName: "web"},
		{name: "a record of an old Helm larger than the limit is too large", data: plain, limit: len(plainJSON) - 1, tooLarge: true},
		{name: "a gzip bomb is too large", data: charttest.GzipBombRecord(64 << 20), limit: MaxReleaseRecordSize, tooLarge: true},
		{name: "data that is no base64 is an error, not too large", data: []byte("not base64!"), limit: MaxReleaseRecordSize},
		{name: "gzip of something that is no JSON is an error, not too large", data: charttest.GzipBombRecord(1 << 20), limit: MaxReleaseRecordSize},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := decodeRelease(tt.data, tt.limit)
			switch {
			case tt.tooLarge:
				g.Expect(err).To(MatchError(ErrReleaseRecordTooLarge))
			case tt.wantName == "":
				g.Expect(err).To(HaveOccurred())
				g.Expect(errors.Is(err, ErrReleaseRecordTooLarge)).To(BeFalse())
			default:
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(got.Name).To(Equal(tt.wantName))
				g.Expect(got.size).To(BeNumerically("<=", tt.limit))
			}
		})
	}
}

// TestDecodingAGzipBombAllocatesLittle: a record of 1 GiB of zeros is refused having allocated
// about the limit, not the gigabyte.
func TestDecodingAGzipBombAllocatesLittle(t *testing.T) {
	g := NewWithT(t)
	bomb := charttest.GzipBombRecord(1 << 30)
	allocated := allocatedBy(func() {
		_, err := decodeRelease(bomb, MaxReleaseRecordSize)
		g.Expect(err).To(MatchError(ErrReleaseRecordTooLarge))
	})
	// io.ReadAll allocates about twice what it reads.
	g.Expect(allocated).To(BeNumerically("<", 3*MaxReleaseRecordSize), "bytes allocated")
}

// allocatedBy is how many bytes of heap f allocated (this process's, so not in parallel).
func allocatedBy(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

func TestReadsAreBounded(t *testing.T) {
	web := map[string]string{"owner": "helm", "name": "web"}
	tests := []struct {
		name string
		// records are the data of the release Secrets of web, revisions 1, 2, ...
		records [][]byte
		wantLen int
		// wantErr is in the error of Query and List; "" when they succeed.
		wantErr string
	}{
		{name: "records Helm wrote are read", records: [][]byte{helmRecord(t, sampleRelease()), helmRecord(t, sampleRelease())}, wantLen: 2},
		{name: "a record that is no release is skipped, as Helm does", records: [][]byte{helmRecord(t, sampleRelease()), []byte("no release")}, wantLen: 1},
		{name: "a gzip bomb is refused naming its Secret and what to do",
			records: [][]byte{helmRecord(t, sampleRelease()), charttest.GzipBombRecord(700 << 20)},
			wantErr: "Helm release record in Secret apps/sh.helm.release.v1.web.v2: release record too large: it decodes to more than 8 MiB: " +
				"no Helm release stores that much, so it is no release Helm wrote: delete the Secret (kubectl -n apps delete secret sh.helm.release.v1.web.v2)"},
		{name: "records each under the limit but too large together are refused",
			records: repeat(charttest.GzipBombRecord(7<<20), 2*MaxReleaseRecordsSize/(7<<20)),
			wantErr: "in namespace apps decode to more than 48 MiB together"},
		{name: "more records than the most read are refused",
			records: repeat([]byte("x"), MaxReleaseRecords+1),
			wantErr: "namespace apps has more than 1024 Secrets labelled"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			client := fake.NewClientset()
			for i, data := range tt.records {
				g.Expect(client.Tracker().Add(charttest.ReleaseRecordSecret("apps", "web", i+1, data))).To(Succeed())
			}
			store := New(client.CoreV1(), "apps")
			allocated := allocatedBy(func() {
				q, qErr := store.Query(web)
				l, lErr := store.List(func(ri.Releaser) bool { return true })
				if tt.wantErr == "" {
					g.Expect(qErr).NotTo(HaveOccurred())
					g.Expect(lErr).NotTo(HaveOccurred())
					g.Expect(q).To(HaveLen(tt.wantLen))
					g.Expect(l).To(HaveLen(tt.wantLen))
					return
				}
				for _, err := range []error{qErr, lErr} {
					g.Expect(err).To(MatchError(ErrReleaseRecordTooLarge))
					g.Expect(err.Error()).To(ContainSubstring(tt.wantErr))
				}
			})
			g.Expect(allocated).To(BeNumerically("<", 2*3*MaxReleaseRecordsSize), "bytes allocated by two reads")
		})
	}
}

func repeat(data []byte, n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = data
	}
	return out
}

// TestGetAndDeleteAreBounded: reading one record by its Secret's name is bounded too, and
// Delete, which reads the record it deletes, deletes nothing it cannot read.
func TestGetAndDeleteAreBounded(t *testing.T) {
	g := NewWithT(t)
	client := fake.NewClientset()
	secret := charttest.ReleaseRecordSecret("apps", "web", 1, charttest.GzipBombRecord(700<<20))
	_, err := client.CoreV1().Secrets("apps").Create(context.Background(), secret, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	store := New(client.CoreV1(), "apps")

	_, err = store.Get(secret.Name)
	g.Expect(err).To(MatchError(ErrReleaseRecordTooLarge))
	_, err = store.Delete(secret.Name)
	g.Expect(err).To(MatchError(ErrReleaseRecordTooLarge))
	_, err = client.CoreV1().Secrets("apps").Get(context.Background(), secret.Name, metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())

	_, err = store.Get("sh.helm.release.v1.other.v1")
	g.Expect(err).To(MatchError(driver.ErrReleaseNotFound))

	good := charttest.ReleaseRecordSecret("apps", "web", 2, helmRecord(t, sampleRelease()))
	g.Expect(client.Tracker().Add(good)).To(Succeed())
	got, err := store.Get(good.Name)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(BeAssignableToTypeOf(&release.Release{}))
}
