package fielderrors

import "k8s.io/apimachinery/pkg/util/validation/field"

// NotSupported is field.NotSupported with a detail that says what to use instead.
func NotSupported(path *field.Path, value any, detail string) *field.Error {
	return &field.Error{Type: field.ErrorTypeNotSupported, Field: path.String(), BadValue: value, Detail: detail}
}
