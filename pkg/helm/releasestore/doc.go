// Package releasestore keeps Helm release records where Helm keeps them, in Secrets of the
// release namespace (so the helm CLI sees the same releases), and reads them with bounds.
//
// A release record is a Secret of a workload cluster, which anyone who may write Secrets in the
// release namespace can forge: its content is untrusted input. Helm's own Secrets driver reads
// a record whole (base64, then gzip, then JSON), so a forged record holding a gzip bomb (700 KiB
// in a Secret, 700 MiB inflated) would be decompressed in the manager on every resync, and a
// namespace full of them would be read all at once. Secrets is Helm's driver with every read
// bounded:
//
//   - a record is decoded through a reader that stops after MaxReleaseRecordSize bytes; a
//     record that decodes to more is an error wrapping ErrReleaseRecordTooLarge, naming the
//     Secret and saying to delete it if it is no release of the reader's;
//   - lists are read in pages of a few Secrets, look at no more than MaxReleaseRecords Secrets
//     and decode no more than MaxReleaseRecordsSize bytes in all (every byte decoded counts,
//     also of records that turn out to be no release); past either bound the read fails.
//
// Records that do not decode at all (not base64, not gzip, not JSON) are skipped by lists, as
// Helm skips them. A record too large is an error instead, since a release whose history cannot
// be read cannot be managed either. Records are written by Helm's own driver, unchanged.
package releasestore
