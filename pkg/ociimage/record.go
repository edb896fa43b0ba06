package ociimage

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/flotilla-dev/flotilla/pkg/atomicfile"
)

// Record is what the images Flotilla built were: the digest of each by its upstream name
// (Image.Name). Whoever writes a node's configuration pins the images by these digests, so
// that an image replaced under the same tag in the mirror is not pulled.
type Record map[string]string

// RecordPath is the record of a Flotilla home: <home>/registry/images.json, written by
// `flotilla image build`.
func RecordPath(home string) string { return filepath.Join(home, "registry", "images.json") }

// ReadRecord reads the record at path; a missing file is an empty record.
func ReadRecord(path string) (Record, error) {
	data, err := os.ReadFile(path) //nolint:gosec // in Flotilla's home
	if errors.Is(err, fs.ErrNotExist) {
		return Record{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the digests of Flotilla's images: %w", err)
	}
	r := Record{}
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("%s: %w: run 'flotilla image build' to write it again", path, err)
	}
	return r, nil
}

// RecordDigests adds the digests of built (upstream name to digest) to the record at path,
// keeping the others.
func RecordDigests(path string, built Record) error {
	r, err := ReadRecord(path)
	if err != nil {
		return err
	}
	for n, d := range built {
		r[n] = d
	}
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(path, append(data, '\n'))
}

// Pin returns the reference of the image upstream names pinned by its recorded digest,
// <upstream>@sha256:..., which containerd and kubelet pull by digest only.
func (r Record) Pin(upstream string) (string, error) {
	digest, ok := r[upstream]
	if !ok {
		return "", fmt.Errorf("the digest of %s is not recorded: run 'flotilla image build' (it records the digests of the images it pushes in $FLOTILLA_HOME/registry/images.json)", upstream)
	}
	pinned := upstream + "@" + digest
	if _, err := name.NewDigest(pinned, name.StrictValidation); err != nil {
		return "", fmt.Errorf("the recorded digest of %s, %q: %w: run 'flotilla image build' to record it again", upstream, digest, err)
	}
	return pinned, nil
}
