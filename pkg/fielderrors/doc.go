// Package fielderrors builds the field errors (k8s.io/apimachinery's field.Error) that the
// rules of Flotilla's objects return, where apimachinery's own constructors cannot say what to
// do instead: a NotSupported error whose detail is a sentence of the caller's, rather than the
// list of supported values apimachinery writes.
package fielderrors
