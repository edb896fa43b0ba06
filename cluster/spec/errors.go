package spec

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Error is returned by Load and Parse when a spec file is not valid. It lists every problem
// found, each naming where it is and what to do.
type Error struct {
	// File is the spec file's name as the user gave it.
	File string
	// Problems are in file order where possible.
	Problems []Problem
}

// Problem is one thing wrong with a spec file.
type Problem struct {
	// Line is the 1-based line in the file the problem is on, or 0 when it concerns the file
	// as a whole.
	Line int
	// Document names the YAML document, such as `document 2 (LocalMachineConfig "w1-workers")`,
	// or is empty when the problem concerns the file as a whole.
	Document string
	// Field is the path of the field in the document, such as
	// "spec.workerNodeGroups[0].machineGroupRef", or empty.
	Field string
	// Message says what is wrong and how to fix it.
	Message string
}

func (e *Error) Error() string {
	if len(e.Problems) == 1 {
		return e.Problems[0].format(e.File)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s has %d problems:", e.File, len(e.Problems))
	for _, p := range e.Problems {
		b.WriteString("\n  ")
		b.WriteString(p.format(e.File))
	}
	return b.String()
}

// format renders the problem as "file:line: document: field: message", leaving out what is
// unknown.
func (p Problem) format(file string) string {
	var b strings.Builder
	b.WriteString(file)
	if p.Line > 0 {
		fmt.Fprintf(&b, ":%d", p.Line)
	}
	b.WriteString(": ")
	if p.Document != "" {
		b.WriteString(p.Document)
		b.WriteString(": ")
	}
	if p.Field != "" {
		b.WriteString(p.Field)
		b.WriteString(": ")
	}
	b.WriteString(p.Message)
	return b.String()
}

// problems collects the problems of one file.
type problems struct {
	file string
	list []Problem
	// clusterDoc is the Cluster's document, once known, for problems about Cluster fields.
	clusterDoc *document
}

// whole records a problem with the file as a whole.
func (p *problems) whole(format string, args ...any) {
	p.list = append(p.list, Problem{Message: fmt.Sprintf(format, args...)})
}

// doc records a problem with a field of a document. path may be empty.
func (p *problems) doc(d *document, path string, format string, args ...any) {
	p.list = append(p.list, Problem{
		Line:     d.lineOf(path),
		Document: d.label(),
		Field:    path,
		Message:  fmt.Sprintf(format, args...),
	})
}

// cluster records a problem with a field of the Cluster.
func (p *problems) cluster(path *field.Path, format string, args ...any) {
	p.doc(p.clusterDoc, path.String(), format, args...)
}

func (p *problems) err() error {
	if len(p.list) == 0 {
		return nil
	}
	return &Error{File: p.file, Problems: p.list}
}
