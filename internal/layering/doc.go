// Package layering is the direction imports take between the tree's top-level folders, written
// once: Layers lists them from the top (cmd, which links everything) to the bottom (api, which
// imports nothing of Flotilla's), and a non-test file may import only from its own folder or a
// folder of a lower layer. Folders of one layer (cluster, addons, packages) do not import each
// other: what two of them share lives lower, in pkg/ (pkg/predelete, the teardown protocol).
//
// Its tests hold the tree to it, reading the import lines of every non-test .go file, and check
// that .golangci.yml's depguard rules (`make lint`) deny, for each layer, exactly the folders
// above it and beside it, so the lint and the test cannot drift apart.
package layering
