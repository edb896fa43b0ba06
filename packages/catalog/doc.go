// Package catalog resolves a Package in its cluster's active bundle and checks its config: the
// rules the Package webhook enforces at apply time and the Package controller enforces again
// before it installs (a bundle may change between the two).
//
// Resolve answers three questions in order, each failure naming the field at fault:
//   - is spec.packageName a package of the bundle (spec.packageName);
//   - is spec.packageVersion one of its versions, or is there a default (spec.packageVersion);
//   - does spec.config parse as YAML and satisfy the version's JSON Schema (spec.config.<path>).
package catalog
