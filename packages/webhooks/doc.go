// Package webhooks validates Packages at apply time: a Package lives in the namespace
// flotilla-packages-<cluster>; its package and version exist in the cluster's active bundle; its
// spec.config satisfies that version's JSON Schema, each error naming the offending path
// (spec.config.service.port); spec.targetNamespace does not change. A Package whose cluster has
// no active bundle yet is accepted: the controller resolves it once there is one.
package webhooks
