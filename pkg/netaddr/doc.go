// Package netaddr answers questions about network addresses that several parts of Flotilla ask
// the same way: whether a host or a listen address stays on this machine (IsLoopback).
//
// Flotilla treats loopback addresses as trusted transport: the embedded registry may serve them
// without TLS or authentication, and clients reach loopback registries over plain HTTP by
// default. Every other address, including the unspecified ones that listen on all interfaces
// (":5001", "0.0.0.0:5001", "[::]:5001") and host names other than localhost, is not loopback.
package netaddr
