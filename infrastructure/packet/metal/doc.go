// Package metal is a small typed client of the Equinix Metal (formerly Packet) API: projects,
// devices with tags and user data, IP reservations and their assignments to devices.
//
// The client speaks the public API as documented (https://api.equinix.com/metal/v1, JSON bodies,
// the API key in the X-Auth-Token header). Every call goes through one request path that retries
// rate-limited (429) and failed (5xx) responses with exponential backoff, honouring the server's
// Retry-After header, so callers see either a result or an *APIError after the attempts run out.
//
// Creating a device is not idempotent in the API. EnsureDevice makes it so for callers that give
// every device an identity tag: it looks for a device carrying that tag before it creates one,
// and looks again before any retry, so a crash or a lost response between "create" and "record
// the ID" never leaves two devices for one machine.
//
// Interface is what the Packet reconcilers depend on; *Client implements it against a real or
// simulated (see package metalsim) endpoint.
package metal
