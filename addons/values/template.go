package values

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"sync"
	"text/template"

	"github.com/Masterminds/sprig/v3"
	"sigs.k8s.io/yaml"
)

// Data is what a values template sees: the full content of the cluster's objects.
type Data struct {
	// Cluster is the Cluster API Cluster.
	Cluster map[string]any
	// ControlPlane is the object the Cluster's controlPlaneRef names; empty when none.
	ControlPlane map[string]any
	// InfraCluster is the object the Cluster's infrastructureRef names; empty when none.
	InfraCluster map[string]any
}

// MaxRenderedSize bounds the output of one template, and the values it encodes to.
const MaxRenderedSize = 1 << 20

// excludedFunctions are Sprig functions left out on top of those Sprig itself calls
// non-hermetic: they read the clock, use randomness, or burn CPU generating keys.
var excludedFunctions = []string{
	"ago", "randInt",
	"genPrivateKey", "derivePassword", "genCA", "genCAWithKey", "genSelfSignedCert",
	"genSelfSignedCertWithKey", "genSignedCert", "genSignedCertWithKey",
	"encryptAES", "decryptAES",
}

// Functions returns the functions a values template may call: Sprig's hermetic set without
// excludedFunctions, plus toYaml, fromYaml and toJson.
func Functions() template.FuncMap {
	f := sprig.HermeticTxtFuncMap()
	for _, name := range excludedFunctions {
		delete(f, name)
	}
	maps.Copy(f, template.FuncMap{
		"toYaml": func(v any) (string, error) {
			b, err := yaml.Marshal(v)
			if err != nil {
				return "", err
			}
			return string(bytes.TrimSuffix(b, []byte("\n"))), nil
		},
		"fromYaml": func(s string) (map[string]any, error) {
			m := map[string]any{}
			if err := yaml.Unmarshal([]byte(s), &m); err != nil {
				return nil, err
			}
			return m, nil
		},
	})
	return f
}

// templateName names the template in text/template's errors, which formatError rewrites.
const templateName = "valuesTemplate"

// execute renders a values template with data in this process and returns the values as
// canonical YAML (sorted keys; "" when the template renders no values). Nothing but the size of
// its output bounds it: only a render worker (worker.go) calls it, in a process Render kills
// when it runs over its limits. Its errors say on which line of the template the problem is,
// and what it is.
func execute(text string, data Data) (string, error) {
	rendered, err := executeText(text, data)
	if err != nil {
		return "", err
	}
	values, err := Parse(rendered)
	if err != nil {
		return "", fmt.Errorf("the rendered valuesTemplate is not a YAML mapping: %w", err)
	}
	canonical, err := Encode(values)
	if err != nil {
		return "", fmt.Errorf("valuesTemplate: %w", err)
	}
	// YAML anchors expand when the values are encoded again: the result is bounded too.
	if len(canonical) > MaxRenderedSize {
		return "", fmt.Errorf("valuesTemplate: %w", errTooLarge)
	}
	return canonical, nil
}

// executeText renders a template with data and returns the text as rendered, whatever it is
// (a patch of a post-render, say), bounded like execute.
func executeText(text string, data Data) (string, error) {
	t, err := parse(text)
	if err != nil {
		return "", formatError(err)
	}
	out := &limitedBuffer{max: MaxRenderedSize}
	in := map[string]any{
		"Cluster":      nonNil(data.Cluster),
		"ControlPlane": nonNil(data.ControlPlane),
		"InfraCluster": nonNil(data.InfraCluster),
	}
	if err := t.Execute(out, in); err != nil {
		return "", formatError(err)
	}
	return out.String(), nil
}

// parsed holds the templates parse parsed, by their text: a HelmChartProxy renders the same
// template for each of its clusters on every reconcile, and parsing (which checks each of
// Sprig's functions) costs more than executing. A parsed template may be executed concurrently.
var parsed struct {
	sync.Mutex
	templates map[string]*template.Template
}

// maxParsed bounds parsed: past it, the templates are parsed again.
const maxParsed = 256

// parse parses text as a values template, or returns it parsed before.
func parse(text string) (*template.Template, error) {
	parsed.Lock()
	t, ok := parsed.templates[text]
	parsed.Unlock()
	if ok {
		return t, nil
	}
	t, err := template.New(templateName).Option("missingkey=error").Funcs(Functions()).Parse(text)
	if err != nil {
		return nil, err
	}
	parsed.Lock()
	defer parsed.Unlock()
	if parsed.templates == nil || len(parsed.templates) >= maxParsed {
		parsed.templates = map[string]*template.Template{}
	}
	parsed.templates[text] = t
	return t, nil
}

func nonNil(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

// templateError matches text/template's "template: NAME:LINE[:COL]: MESSAGE".
var templateError = regexp.MustCompile(`^template: ` + templateName + `:(\d+)(?::(\d+))?: (?s)(.*)$`)

// executingPrefix is the noise text/template puts before an execution error's operand.
var executingPrefix = regexp.MustCompile(`^executing "` + templateName + `" at `)

// formatError turns text/template's error into "valuesTemplate line L, column C: MESSAGE".
func formatError(err error) error {
	if errors.Is(err, errTooLarge) {
		return fmt.Errorf("valuesTemplate: %w", err)
	}
	m := templateError.FindStringSubmatch(err.Error())
	if m == nil {
		return fmt.Errorf("valuesTemplate: %w", err)
	}
	msg := executingPrefix.ReplaceAllString(m[3], "")
	if m[2] != "" {
		return fmt.Errorf("valuesTemplate line %s, column %s: %s", m[1], m[2], msg)
	}
	return fmt.Errorf("valuesTemplate line %s: %s", m[1], msg)
}

var errTooLarge = fmt.Errorf("the rendered values exceed %d bytes", MaxRenderedSize)

// limitedBuffer fails writes past max bytes, which stops the template's execution.
type limitedBuffer struct {
	bytes.Buffer
	max int
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if b.Len()+len(p) > b.max {
		return 0, errTooLarge
	}
	return b.Buffer.Write(p)
}
