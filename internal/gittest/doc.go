// Package gittest serves Git repositories to tests over HTTP on loopback: the real git
// http-backend (Git's smart HTTP protocol, as hosting services speak it) behind net/http/cgi,
// optionally behind basic authentication, and a server that accepts connections and never
// answers, as a hung Git server does. It is imported only by _test.go files.
//
//	url := gittest.Serve(t, dir, gittest.BasicAuth("flotilla", "s3cret"))
//	// http://127.0.0.1:PORT/repo.git serves the bare repository at dir
//
//	hung := gittest.Hung(t)
//	// hung.URL accepts connections and answers nothing; hung.Accepted says when one came
//
// Serve needs git on the PATH. Every helper cleans up after the test.
package gittest
