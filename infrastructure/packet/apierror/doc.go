// Package apierror decides what a Packet reconciler does about a failed Metal API call: which
// condition reason explains it, whether to come back after a while (rate limits, missing
// credentials), to retry with the controller's backoff (server errors), or to stop because the
// request itself is wrong (unknown metro or plan).
package apierror
