package releasestore

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	ri "helm.sh/helm/v4/pkg/release"
	release "helm.sh/helm/v4/pkg/release/v1"
	"helm.sh/helm/v4/pkg/storage/driver"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
)

// The bounds on reading release records.
const (
	// MaxReleaseRecordSize is the most one release record may decode to (its JSON, after base64
	// and gzip). Helm stores a record gzip-compressed in one Secret, which holds at most 1 MiB;
	// the records of Flotilla's own charts decode to 4-13 KiB, and those of the largest public
	// charts (whose chart files carry big CRDs) to a few MiB.
	MaxReleaseRecordSize = 8 << 20
	// MaxReleaseRecordsSize is the most the release records one read (a release's history, or
	// the releases of a namespace) may decode to together: six records of the largest size, a
	// history of 5 and a pending revision. Twenty reads at once (the manager reconciles 10
	// HelmReleaseProxies and 10 Packages at once by default) hold under 1 GiB.
	MaxReleaseRecordsSize = 6 * MaxReleaseRecordSize
	// MaxReleaseRecords is the most release records (Secrets labelled owner=helm) one read
	// looks at.
	MaxReleaseRecords = 1024
	// releaseListPage is how many Secrets one list request returns, so that a read holds at
	// most this many encoded records (a Secret holds at most 1 MiB) at once.
	releaseListPage = 8
)

// ErrReleaseRecordTooLarge is wrapped by the error of a read that met a release record larger
// than MaxReleaseRecordSize, or records larger than MaxReleaseRecordsSize together, or more
// than MaxReleaseRecords of them. The message names the Secret and what to do.
var ErrReleaseRecordTooLarge = errors.New("release record too large")

// Secrets is Helm's Secrets storage driver with bounded reads (see the package documentation).
type Secrets struct {
	*driver.Secrets // Name, Create and Update
	secrets         corev1client.SecretInterface
	namespace       string
}

var _ driver.Driver = &Secrets{}

// New returns the driver of the release records in namespace.
func New(client corev1client.CoreV1Interface, namespace string) *Secrets {
	s := client.Secrets(namespace)
	return &Secrets{Secrets: driver.NewSecrets(s), secrets: s, namespace: namespace}
}

// Get returns the release record in the Secret key.
func (s *Secrets) Get(key string) (ri.Releaser, error) {
	obj, err := s.secrets.Get(context.Background(), key, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, driver.ErrReleaseNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("reading the Helm release record in Secret %s/%s: %w", s.namespace, key, err)
	}
	r, err := decodeRelease(obj.Data["release"], MaxReleaseRecordSize)
	if err != nil {
		return nil, s.decodeError(key, err)
	}
	r.Labels = withoutSystemLabels(obj.Labels)
	return r.Release, nil
}

// List returns the namespace's releases that filter keeps.
func (s *Secrets) List(filter func(ri.Releaser) bool) ([]ri.Releaser, error) {
	return s.read(labels.Set{"owner": "helm"}, filter)
}

// Query returns the releases whose labels match, or driver.ErrReleaseNotFound when none does.
func (s *Secrets) Query(match map[string]string) ([]ri.Releaser, error) {
	set := labels.Set{}
	for k, v := range match {
		if errs := validation.IsValidLabelValue(v); len(errs) != 0 {
			return nil, fmt.Errorf("invalid label value %q: %s", v, strings.Join(errs, "; "))
		}
		set[k] = v
	}
	results, err := s.read(set, nil)
	if err != nil {
		return nil, err
	}
	if len(results) == 0 {
		return nil, driver.ErrReleaseNotFound
	}
	return results, nil
}

// Delete removes the release record in the Secret key and returns it.
func (s *Secrets) Delete(key string) (ri.Releaser, error) {
	r, err := s.Get(key)
	if err != nil {
		return nil, err
	}
	if err := s.secrets.Delete(context.Background(), key, metav1.DeleteOptions{}); err != nil {
		return nil, err
	}
	return r, nil
}

// read lists the Secrets that match, page by page, and decodes their records (returning those
// filter keeps, when it is not nil) within the bounds: every byte decoded counts, also of
// records that turn out to be no release.
func (s *Secrets) read(match labels.Set, filter func(ri.Releaser) bool) ([]ri.Releaser, error) {
	opts := metav1.ListOptions{LabelSelector: match.AsSelector().String(), Limit: releaseListPage}
	var results []ri.Releaser
	seen, total := 0, 0
	for {
		list, err := s.secrets.List(context.Background(), opts)
		if err != nil {
			return nil, fmt.Errorf("listing release records (%s): %w", opts.LabelSelector, err)
		}
		for i := range list.Items {
			item := &list.Items[i]
			if seen++; seen > MaxReleaseRecords {
				return nil, fmt.Errorf("%w: namespace %s has more than %d Secrets labelled %s, the most Flotilla reads: delete those that are no Helm releases of yours",
					ErrReleaseRecordTooLarge, s.namespace, MaxReleaseRecords, opts.LabelSelector)
			}
			r, err := decodeRelease(item.Data["release"], min(MaxReleaseRecordSize, MaxReleaseRecordsSize-total))
			total += r.size
			if errors.Is(err, ErrReleaseRecordTooLarge) && MaxReleaseRecordsSize-total < MaxReleaseRecordSize {
				return nil, fmt.Errorf("%w: the Secrets labelled %s in namespace %s decode to more than %s together, the most Flotilla reads: delete those that are no Helm releases of yours",
					ErrReleaseRecordTooLarge, opts.LabelSelector, s.namespace, mib(MaxReleaseRecordsSize))
			}
			if errors.Is(err, ErrReleaseRecordTooLarge) {
				return nil, s.decodeError(item.Name, err)
			}
			if err != nil {
				continue // not a release record Helm wrote: Helm skips it too
			}
			r.Labels = item.Labels
			if filter == nil || filter(r.Release) {
				results = append(results, r.Release)
			}
		}
		if opts.Continue = list.Continue; opts.Continue == "" {
			return results, nil
		}
	}
}

// decodeError says which Secret did not decode, and what to do about one too large.
func (s *Secrets) decodeError(key string, err error) error {
	if errors.Is(err, ErrReleaseRecordTooLarge) {
		return fmt.Errorf("reading the Helm release record in Secret %s/%s: %w: no Helm release stores that much, "+
			"so it is no release Helm wrote: delete the Secret (kubectl -n %s delete secret %s) if it is not a release of yours",
			s.namespace, key, err, s.namespace, key)
	}
	return fmt.Errorf("reading the Helm release record in Secret %s/%s: %w", s.namespace, key, err)
}

// decodedRelease is a release record and the size of its JSON.
type decodedRelease struct {
	*release.Release
	// size is how many bytes were decoded, also when they turned out to be no release.
	size int
}

// decodeRelease decodes a release record as Helm stores it (base64 of gzip of JSON; JSON
// without gzip from old Helm versions) reading at most limit bytes of JSON: a record that
// decodes to more is an error wrapping ErrReleaseRecordTooLarge, found before more than limit
// bytes are held.
func decodeRelease(data []byte, limit int) (decodedRelease, error) {
	r := io.Reader(base64.NewDecoder(base64.StdEncoding, bytes.NewReader(data)))
	if gzipped(data) {
		zr, err := gzip.NewReader(r)
		if err != nil {
			return decodedRelease{}, err
		}
		defer func() { _ = zr.Close() }()
		r = zr
	}
	raw, err := io.ReadAll(io.LimitReader(r, int64(limit)+1))
	if err != nil {
		return decodedRelease{}, err
	}
	if len(raw) > limit {
		return decodedRelease{}, fmt.Errorf("%w: it decodes to more than %s", ErrReleaseRecordTooLarge, mib(limit))
	}
	var rel release.Release
	if err := json.Unmarshal(raw, &rel); err != nil {
		return decodedRelease{size: len(raw)}, err
	}
	return decodedRelease{Release: &rel, size: len(raw)}, nil
}

// gzipped: the base64 data begins with the gzip magic (1f 8b 08), whose base64 is "H4sI".
func gzipped(data []byte) bool {
	return bytes.HasPrefix(data, []byte("H4sI"))
}

// mib is n bytes in MiB, as the errors say it.
func mib(n int) string {
	return fmt.Sprintf("%d MiB", n>>20)
}

// withoutSystemLabels is labels without Helm's own (driver.GetSystemLabels), as Helm's Get
// returns them.
func withoutSystemLabels(all map[string]string) map[string]string {
	system := map[string]bool{}
	for _, k := range driver.GetSystemLabels() {
		system[k] = true
	}
	out := map[string]string{}
	for k, v := range all {
		if !system[k] {
			out[k] = v
		}
	}
	return out
}
