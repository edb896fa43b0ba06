package spec

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	yaml3 "go.yaml.in/yaml/v3"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-dev/flotilla/infrastructure/providers"
)

// rawDocument is one YAML document of a file, before decoding.
type rawDocument struct {
	data []byte
	// line is the file line the document's text starts on (1-based).
	line int
}

// document is one decoded YAML document of a spec file.
type document struct {
	// index counts the non-empty documents of the file from 1.
	index int
	// start is the file line the document's text starts on; node lines are relative to it.
	start int
	// node is the document's YAML tree, used to find the line of a field; nil if yaml.v3
	// could not parse what the strict decoder accepted.
	node *yaml3.Node

	kind     kind
	provider *providers.Provider // nil for the Cluster, GitOpsConfig and ClusterClass
	obj      ctrlclient.Object
}

// label names the document for people: document 2 (LocalMachineConfig "w1-workers").
func (d *document) label() string {
	switch {
	case d.obj == nil:
		return fmt.Sprintf("document %d", d.index)
	case d.obj.GetName() == "":
		return fmt.Sprintf("document %d (%s)", d.index, d.kind.gvk.Kind)
	default:
		return fmt.Sprintf("document %d (%s %q)", d.index, d.kind.gvk.Kind, d.obj.GetName())
	}
}

// lineOf returns the file line of the field at path in the document, or of its closest
// ancestor that exists, or of the document's first line.
func (d *document) lineOf(path string) int {
	if d.node == nil {
		return d.start
	}
	return d.start - 1 + nodeLine(d.node, parsePath(path))
}

// separator matches a YAML document separator line, optionally followed by a comment.
var separator = regexp.MustCompile(`^---(\s.*)?$`)

// splitDocuments splits a multi-document YAML file at its "---" lines, remembering where each
// document starts so that errors can name file lines.
func splitDocuments(data []byte) []rawDocument {
	var docs []rawDocument
	current := rawDocument{line: 1}
	scanner := bufio.NewScanner(bytes.NewReader(data))
	scanner.Buffer(make([]byte, 0, 64*1024), len(data)+1)
	lineNo := 0
	for scanner.Scan() {
		lineNo++
		line := scanner.Bytes()
		if separator.Match(bytes.TrimRight(line, "\r")) {
			docs = append(docs, current)
			current = rawDocument{line: lineNo + 1}
			continue
		}
		current.data = append(current.data, line...)
		current.data = append(current.data, '\n')
	}
	return append(docs, current)
}

// decodeDocuments decodes every non-empty document of a file strictly, recording a problem for
// each that is not valid YAML, is of an unknown kind, or has unknown or mistyped fields.
func decodeDocuments(data []byte, p *problems) []*document {
	var docs []*document
	index := 0
	for _, raw := range splitDocuments(data) {
		jsonData, err := yaml.YAMLToJSONStrict(raw.data)
		if err != nil {
			line, msg := yamlError(err, raw.line)
			p.list = append(p.list, Problem{
				Line:     line,
				Document: fmt.Sprintf("document %d", index+1),
				Message:  "invalid YAML: " + msg,
			})
			index++
			continue
		}
		if bytes.Equal(jsonData, []byte("null")) {
			continue // only comments or whitespace
		}
		index++
		d := &document{index: index, start: raw.line}
		var node yaml3.Node
		if yaml3.Unmarshal(raw.data, &node) == nil {
			d.node = &node
		}
		if decodeDocument(d, jsonData, p) {
			docs = append(docs, d)
		}
	}
	return docs
}

// decodeDocument decodes one document into its typed object. It reports whether it succeeded.
func decodeDocument(d *document, data []byte, p *problems) bool {
	if !bytes.HasPrefix(data, []byte("{")) {
		p.doc(d, "", "expected a mapping with apiVersion, kind, metadata and spec, got %s", describeJSON(data))
		return false
	}
	var head struct {
		APIVersion *string `json:"apiVersion"`
		Kind       *string `json:"kind"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		p.doc(d, "", "apiVersion and kind must be strings")
		return false
	}
	if head.Kind == nil || *head.Kind == "" {
		p.doc(d, "kind", "missing; every document names its kind, one of %s", kindNames())
		return false
	}
	k, prov, ok := kindNamed(*head.Kind)
	if !ok && head.APIVersion != nil && isTemplateKind(*head.APIVersion, *head.Kind) {
		return decodeTemplate(d, data, *head.APIVersion, *head.Kind, p) // topology.go
	}
	if !ok {
		p.doc(d, "kind", "%q is not a kind a cluster spec holds; use one of %s", *head.Kind, kindNames())
		return false
	}
	want := k.gvk.GroupVersion().String()
	switch {
	case head.APIVersion == nil || *head.APIVersion == "":
		p.doc(d, "apiVersion", "missing; for kind %s use %s", k.gvk.Kind, want)
		return false
	case *head.APIVersion != want:
		p.doc(d, "apiVersion", "%q does not serve kind %s; use %s", *head.APIVersion, k.gvk.Kind, want)
		return false
	}

	d.kind, d.provider = k, prov
	obj := k.newObject()
	strict, err := kjson.UnmarshalStrict(data, obj)
	// The name helps to label the document even when a later field is wrong.
	d.obj = obj
	if err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			path, ok := pathAtOffset(data, typeErr.Offset)
			if !ok {
				path = typeErr.Field
			}
			p.doc(d, path, "%s", typeMessage(typeErr))
		} else {
			p.doc(d, "", "%v", err)
		}
		return false
	}
	for _, serr := range strict {
		var ferr kjson.FieldError
		if !errors.As(serr, &ferr) {
			p.doc(d, "", "%v", serr)
			continue
		}
		path := ferr.FieldPath()
		if strings.HasPrefix(serr.Error(), "duplicate field") {
			p.doc(d, path, "set twice; keep one")
			continue
		}
		p.doc(d, path, "%s", unknownFieldMessage(reflect.TypeOf(obj), path))
	}
	return len(strict) == 0
}

// yamlLine matches the line references in the YAML parser's errors.
var yamlLine = regexp.MustCompile(`line (\d+): `)

// yamlError turns a YAML parser error into the file line it names and a message without the
// parser's prefixes.
func yamlError(err error, start int) (int, string) {
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "error converting YAML to JSON: ")
	msg = strings.TrimPrefix(msg, "yaml: ")
	msg = strings.TrimPrefix(msg, "unmarshal errors:")
	line := start
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		if n, convErr := strconv.Atoi(m[1]); convErr == nil {
			line = start - 1 + n
		}
	}
	msg = yamlLine.ReplaceAllString(msg, "")
	var parts []string
	for _, part := range strings.Split(msg, "\n") {
		if part = strings.TrimSpace(part); part != "" {
			parts = append(parts, part)
		}
	}
	msg = strings.Join(parts, "; ")
	msg = strings.Replace(msg, "already set in map", "is set twice; keep one", 1)
	return line, msg
}

// typeMessage explains a value of the wrong type.
func typeMessage(e *json.UnmarshalTypeError) string {
	msg := fmt.Sprintf("expected %s, got %s", describeType(e.Type), describeValue(e.Value))
	if e.Type != nil && e.Type.Kind() == reflect.String && strings.HasPrefix(e.Value, "number") {
		msg += `; put it in quotes, as in "1.36" (unquoted, 1.20 would read as 1.2)`
	}
	return msg
}

func describeType(t reflect.Type) string {
	if t == nil {
		return "another type"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "a mapping"
	default:
		return t.String()
	}
}

func describeValue(v string) string {
	switch {
	case v == "string":
		return "a string"
	case v == "bool":
		return "true or false"
	case v == "array":
		return "a list"
	case v == "object":
		return "a mapping"
	case strings.HasPrefix(v, "number "):
		return "the number " + strings.TrimPrefix(v, "number ")
	case v == "number":
		return "a number"
	default:
		return v
	}
}

// describeJSON names the JSON type of a document that is not an object.
func describeJSON(data []byte) string {
	switch {
	case bytes.HasPrefix(data, []byte("[")):
		return "a list"
	case bytes.HasPrefix(data, []byte(`"`)):
		return "a string"
	default:
		return "a scalar " + string(data)
	}
}

// pathAtOffset returns the path ("spec.workerNodeGroups[1].count") of the value that ends at
// offset in JSON data, the position a decoding error reports. The decoder's own error names the
// path without list indexes; this one has them.
func pathAtOffset(data []byte, offset int64) (string, bool) {
	type frame struct {
		array   bool
		key     string
		index   int
		wantKey bool
	}
	var stack []frame
	path := func() string {
		var b strings.Builder
		for _, f := range stack {
			if f.array {
				fmt.Fprintf(&b, "[%d]", f.index)
				continue
			}
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(f.key)
		}
		return b.String()
	}
	afterValue := func() {
		if len(stack) == 0 {
			return
		}
		if top := &stack[len(stack)-1]; top.array {
			top.index++
		} else {
			top.wantKey = true
		}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	for {
		tok, err := dec.Token()
		if err != nil {
			return "", false
		}
		if delim, ok := tok.(json.Delim); ok {
			switch delim {
			case '{', '[':
				if dec.InputOffset() >= offset {
					return path(), true
				}
				stack = append(stack, frame{array: delim == '[', wantKey: delim == '{'})
			default:
				stack = stack[:len(stack)-1]
				afterValue()
			}
			continue
		}
		if n := len(stack); n > 0 && stack[n-1].wantKey {
			stack[n-1].key, _ = tok.(string)
			stack[n-1].wantKey = false
			continue
		}
		if dec.InputOffset() >= offset {
			return path(), true
		}
		afterValue()
	}
}
