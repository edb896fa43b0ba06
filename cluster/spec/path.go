package spec

import (
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"

	yaml3 "go.yaml.in/yaml/v3"
)

// pathElem is one step of a field path: a key, or an index into a list.
type pathElem struct {
	key     string
	index   int
	isIndex bool
}

// parsePath splits a field path such as `spec.workerNodeGroups[0].labels[tier]` into its steps.
func parsePath(path string) []pathElem {
	var elems []pathElem
	for path != "" {
		switch path[0] {
		case '.':
			path = path[1:]
		case '[':
			end := strings.IndexByte(path, ']')
			if end < 0 {
				return append(elems, pathElem{key: path[1:]})
			}
			inner := path[1:end]
			path = path[end+1:]
			if i, err := strconv.Atoi(inner); err == nil {
				elems = append(elems, pathElem{index: i, isIndex: true})
			} else {
				elems = append(elems, pathElem{key: strings.Trim(inner, `"`)})
			}
		default:
			end := strings.IndexAny(path, ".[")
			if end < 0 {
				end = len(path)
			}
			elems = append(elems, pathElem{key: path[:end]})
			path = path[end:]
		}
	}
	return elems
}

// nodeLine returns the line (relative to the document) of the field at path in a YAML tree, or
// of the closest ancestor that exists. For a mapping entry it is the key's line.
func nodeLine(n *yaml3.Node, path []pathElem) int {
	if n.Kind == yaml3.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	line := n.Line
	for _, el := range path {
		if n.Kind == yaml3.AliasNode && n.Alias != nil {
			n = n.Alias
		}
		switch {
		case n.Kind == yaml3.MappingNode && !el.isIndex:
			found := false
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == el.key {
					line = n.Content[i].Line
					n = n.Content[i+1]
					found = true
					break
				}
			}
			if !found {
				return line
			}
		case n.Kind == yaml3.SequenceNode && el.isIndex && el.index >= 0 && el.index < len(n.Content):
			n = n.Content[el.index]
			line = n.Line
		default:
			return line
		}
	}
	return line
}

// unknownFieldMessage explains an unknown field of an object of type root and suggests the
// field that was probably meant.
func unknownFieldMessage(root reflect.Type, path string) string {
	elems := parsePath(path)
	if len(elems) == 0 {
		return "unknown field"
	}
	last := elems[len(elems)-1].key
	parent, ok := typeAt(root, elems[:len(elems)-1])
	if !ok {
		return "unknown field; remove it"
	}
	names := jsonFieldNames(parent)
	if guess := closest(last, names); guess != "" {
		if strings.EqualFold(guess, last) {
			return fmt.Sprintf("unknown field; did you mean %q? (field names are case-sensitive)", guess)
		}
		return fmt.Sprintf("unknown field; did you mean %q?", guess)
	}
	return fmt.Sprintf("unknown field; remove it (known fields here: %s)", strings.Join(names, ", "))
}

// typeAt follows path from the Go type root through struct fields (by JSON name), list elements
// and map values.
func typeAt(root reflect.Type, path []pathElem) (reflect.Type, bool) {
	t := root
	for _, el := range path {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		switch {
		case el.isIndex && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array):
			t = t.Elem()
		case !el.isIndex && t.Kind() == reflect.Map:
			t = t.Elem()
		case !el.isIndex && t.Kind() == reflect.Struct:
			f, ok := jsonField(t, el.key)
			if !ok {
				return nil, false
			}
			t = f
		default:
			return nil, false
		}
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t, true
}

// jsonField returns the type of the struct field whose JSON name is name, looking into inlined
// embedded structs.
func jsonField(t reflect.Type, name string) (reflect.Type, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		tagName, inline := jsonName(f)
		switch {
		case inline:
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				if found, ok := jsonField(ft, name); ok {
					return found, true
				}
			}
		case tagName == name:
			return f.Type, true
		}
	}
	return nil, false
}

// jsonFieldNames lists the JSON names of a struct's fields, sorted, inlined fields included.
func jsonFieldNames(t reflect.Type) []string {
	if t.Kind() != reflect.Struct {
		return nil
	}
	var names []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, inline := jsonName(f)
		switch {
		case inline:
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			names = append(names, jsonFieldNames(ft)...)
		case name != "":
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names
}

// jsonName returns the JSON name of a struct field, or inline for an embedded struct whose
// fields are inlined. Unexported and "-" fields have no name.
func jsonName(f reflect.StructField) (name string, inline bool) {
	tag := f.Tag.Get("json")
	name, opts, _ := strings.Cut(tag, ",")
	if name == "-" && opts == "" {
		return "", false
	}
	if name == "" && (f.Anonymous || strings.Contains(opts, "inline")) {
		return "", true
	}
	if !f.IsExported() {
		return "", false
	}
	if name == "" {
		name = f.Name
	}
	return name, false
}

// closest returns the candidate that word was most likely meant to be: the same ignoring case,
// or within a small edit distance. It returns "" when nothing is close.
func closest(word string, candidates []string) string {
	limit := len(word)/3 + 1
	best, bestDist := "", limit+1
	for _, c := range candidates {
		if strings.EqualFold(c, word) {
			return c
		}
		if d := editDistance(strings.ToLower(word), strings.ToLower(c)); d <= limit && d < bestDist {
			best, bestDist = c, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
