// Package metalsim is an Equinix Metal API simulator: an http.Handler serving the endpoints the
// Packet provider uses (projects, devices, IP reservations and assignments) under /metal/v1,
// with the same paths and JSON as the public API.
//
// It stands in for the real service where that cannot be reached — in tests and behind
// `flotilla dev metal-api` — so the provider's client and reconcilers run against HTTP, not a
// fake. What it models:
//
//   - Authentication: every request needs the configured key in X-Auth-Token (401 otherwise).
//   - Projects come into being on first use of their ID.
//   - Devices move queued → provisioning → active (or failed) as time passes, with configurable
//     delays; states are derived from the creation time on each read, so nothing runs in the
//     background for them. Each device gets a public and a private IPv4 address.
//   - Devices boot, when Options.Devices is set: once active, the device runtime (package
//     devicesim) runs what the device's userdata says, and stops it when the device is deleted.
//   - The catalogue: unknown metros, facilities, plans, operating systems and billing cycles are
//     refused with 422, as the API does.
//   - IP reservations (elastic IPs, handed out from 127.40.0.0-127.254.255.255 so that what a device serves on
//     one is reachable on this machine) and their assignment to devices; a reservation with
//     assignments cannot be released; deleting a device removes its assignments.
//   - A per-project device quota; exhausting it answers 429.
//   - Fault injection: 429 with Retry-After, 5xx, slow responses, responses lost after the
//     request took effect (a crash between "create" and "record the ID"), devices that fail to
//     provision. Faults are set from Go (Server.InjectFault) or over HTTP (POST /_sim/faults).
//   - The inventory is readable through the API itself; request counts through Server.Stats or
//     GET /_sim/stats, so callers can measure how many calls provisioning costs.
package metalsim
