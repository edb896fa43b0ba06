// Package objectpatch is how every Flotilla reconciler writes back the object it reconciles:
// its finalizers, its metadata and spec, and its status.
//
// A reconcile reads its object, calls New, and changes the object in memory; a Patch remembers
// the object as read and, after each write, as written, so each write sends only what changed
// since the last one:
//
//	obj := &infrav1.PacketCluster{}
//	if err := c.Get(ctx, key, obj); err != nil { ... }
//	p := objectpatch.New(c, obj)
//	if added, err := p.EnsureFinalizer(ctx, infrav1.PacketClusterFinalizer); err != nil || added { ... }
//	defer func() { reterr = errors.Join(reterr, p.Write(ctx)) }()
//
// # One status write
//
// Write patches the metadata and spec with one merge patch, then the whole status, conditions
// included, with one merge patch of the status subresource (or one apply of the writer's part of
// it, below). Cluster API's patch.Helper, which the Packet and local providers used before,
// writes the conditions and the rest of the status separately, the conditions first. The
// controllers that read these objects (Cluster API's Cluster controller reads the PacketCluster,
// its Machine controller the PacketMachines) are woken by the first write and then read an
// object that is Ready but not yet provisioned; Cluster API's controllers reconcile an object at
// most once a second, so they saw a device active, or the elastic IP reserved, a second late.
// One status write has no such in-between state.
//
// The helper's per-condition merge is not needed: the reconciler of an object is the only
// writer of its conditions, except on a Flotilla Cluster (below). Cluster API's paused package
// writes the Paused condition of the providers' objects itself, with its own patch, before a
// reconcile goes on: a reconcile whose object it wrote ends there (the write brings the next
// one), and one that goes on finds the condition changed in memory only, which Write sends with
// the rest of the status.
//
// # A status with more than one writer
//
// A merge patch replaces the whole list of conditions, so a writer whose copy of the object
// predates another writer's condition would drop it. Where a status has more than one writer,
// each writer owns its fields and the conditions of its types, and WithStatusApply has Write
// send the writer's part of the status by server-side apply, as the writer's field manager,
// instead of the merge patch (as cert-manager's controllers write a Certificate's conditions).
// The conditions are a list keyed by type (+listType=map, +listMapKey=type), so the API server
// merges each writer's apply with what the others own, entry by entry, whatever copy of the
// object the writer read, and the object's managedFields name the writer of each condition.
// Each writer applies the whole of its part every time: what it leaves out of its part it no
// longer owns, and the API server removes it.
//
// A Flotilla Cluster has two such writers: the Cluster reconciler of the cluster component owns
// its status but for the conditions of other components, and the packages component's
// lifecycle reconciler owns the PackagesReady condition.
//
// # Finalizers
//
// A merge patch replaces the whole list of finalizers, so a patch computed from an outdated copy
// of the object would drop a finalizer someone else added since, or put back one someone else
// removed (which then holds the object forever). Every patch that changes the finalizers
// therefore carries an optimistic lock: EnsureFinalizer and RemoveFinalizer, which write the
// finalizer alone at once (before a reconcile acts on the world, and when it lets the object
// go), and Write when the reconcile changed the finalizers in memory. A conflict means the
// reconcile worked from an outdated copy: RequeueOnConflict turns it into a quiet requeue.
//
// # Optimistic locks, resource versions, deleted objects
//
// WithOptimisticLock locks every patch of a write, for a status that records a decision that a
// reconcile working from an outdated copy must not make again (the batch of a HelmChartProxy's
// rollout). After every write the object in memory carries the resourceVersion the API server
// gave it (and the generation, after a change of the spec), so the next locked write starts from
// there, the status records the generation of the spec it acted on, and a reconciler can remember
// the version of its own last write to recognise a cached copy that predates it.
//
// A status write that finds the object gone is not an error: the object let go of its last
// finalizer, or was deleted while the reconcile ran, and its status went with it.
package objectpatch
