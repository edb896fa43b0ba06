package atomicfile

import (
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
)

func TestWrite(t *testing.T) {
	g := NewWithT(t)
	dir := filepath.Join(t.TempDir(), "a", "b")
	path := filepath.Join(dir, "secret")

	g.Expect(Write(path, []byte("one"))).To(Succeed())
	g.Expect(Write(path, []byte("two"))).To(Succeed())

	data, err := os.ReadFile(path)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(data)).To(Equal("two"))

	info, err := os.Stat(path)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(info.Mode().Perm()).To(Equal(os.FileMode(0o600)))
	dirInfo, err := os.Stat(dir)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(dirInfo.Mode().Perm()).To(Equal(os.FileMode(0o700)))

	entries, err := os.ReadDir(dir)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(entries).To(HaveLen(1), "no temporary file is left behind")
}

func TestWriteIntoADirectoryThatCannotBeCreated(t *testing.T) {
	g := NewWithT(t)
	file := filepath.Join(t.TempDir(), "file")
	g.Expect(os.WriteFile(file, nil, 0o600)).To(Succeed())
	g.Expect(Write(filepath.Join(file, "x"), []byte("x"))).To(MatchError(ContainSubstring("creating")))
}
