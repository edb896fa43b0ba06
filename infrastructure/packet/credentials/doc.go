// Package credentials turns a PacketCluster's credentials reference into a Metal API client: the
// API key is read from a Secret in flotilla-system (which cluster creators cannot read), the
// base URL from the PacketCluster.
package credentials
