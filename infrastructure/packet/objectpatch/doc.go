// Package objectpatch writes back what a reconcile changed on one of the Packet provider's
// objects: its metadata and spec with one merge patch, then its whole status, conditions
// included, with one merge patch of the status subresource.
//
// Cluster API's patch.Helper, which the reconcilers used before, writes the conditions and the
// rest of the status separately, the conditions first. The controllers that read these objects
// (Cluster API's Cluster controller reads the PacketCluster, its Machine controller the
// PacketMachines) are woken by the first write and then read an object that is Ready but not yet
// provisioned; Cluster API's controllers reconcile an object at most once a second, so they saw
// a device active, or the elastic IP reserved, a second late. One status write has no such
// in-between state.
//
// The helper's per-condition merge is not needed: the Packet reconcilers are the only writers of
// their objects' conditions (Ready, and Paused through Cluster API's paused package, which writes
// before a reconcile goes on).
package objectpatch
