package helm

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"path"
	"strings"

	"helm.sh/helm/v4/pkg/chart/common"
	commonutil "helm.sh/helm/v4/pkg/chart/common/util"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"helm.sh/helm/v4/pkg/engine"
)

// MaxRenderedChartSize bounds what a chart's templates render to, together.
const MaxRenderedChartSize = 32 << 20

// A ChartRenderer runs RenderChart where its time and memory are bounded, such as in a child
// process (the manager's render workers, addons/values): a chart's templates are code that
// whoever publishes the chart wrote, and text/template can neither be interrupted nor limited
// in what it allocates.
type ChartRenderer interface {
	RenderChart(ctx context.Context, r ChartRender) (map[string]string, error)
}

// ChartRender is one render of a chart's templates: everything Helm's engine sees, in a form
// that can be sent to another process (encoding/gob).
type ChartRender struct {
	// Archive is the chart archive (.tgz) as pulled.
	Archive []byte
	// Annotations are added to the chart's (the engine's stamp, which templates see as
	// .Chart.Annotations).
	Annotations map[string]string
	// Values are the caller's values, as JSON.
	Values []byte
	// Release is what templates see as .Release.
	Release common.ReleaseOptions
	// Capabilities are what templates see as .Capabilities.
	Capabilities common.Capabilities
}

// RenderChart renders the templates of r's chart as Helm's install and upgrade do (subcharts
// disabled by the values left out, the values checked against the chart's schema) and returns
// them by name (<chart>/templates/<file>, <chart>/charts/<sub>/templates/<file>), at most
// MaxRenderedChartSize together. Templates see no cluster: lookup finds nothing, as in
// `helm template`.
func RenderChart(r ChartRender) (map[string]string, error) {
	ch, err := loader.LoadArchive(bytes.NewReader(r.Archive))
	if err != nil {
		return nil, fmt.Errorf("loading the chart: %w", err)
	}
	if ch.Metadata.Annotations == nil {
		ch.Metadata.Annotations = map[string]string{}
	}
	maps.Copy(ch.Metadata.Annotations, r.Annotations)
	values := map[string]any{}
	if err := json.Unmarshal(r.Values, &values); err != nil {
		return nil, fmt.Errorf("reading the values: %w", err)
	}
	if err := chartutil.ProcessDependencies(ch, values); err != nil {
		return nil, fmt.Errorf("chart dependencies processing failed: %w", err)
	}
	caps := r.Capabilities
	toRender, err := commonutil.ToRenderValuesWithSchemaValidation(ch, values, r.Release, &caps, false)
	if err != nil {
		return nil, err
	}
	files, err := engine.Engine{}.Render(ch, toRender)
	if err != nil {
		return nil, err
	}
	size := 0
	for _, f := range files {
		size += len(f)
	}
	if size > MaxRenderedChartSize {
		return nil, fmt.Errorf("the chart's templates render to %d MiB, more than the %d MiB a chart may render to", size>>20, MaxRenderedChartSize>>20)
	}
	return files, nil
}

// prerender renders the templates of ch, loaded from archive, with e.Renderer (in this process
// when it is nil), and replaces each template with what it rendered, so that Helm's own render
// of ch, in this process, only copies text. values are the caller's (normalized); caps nil are
// Helm's defaults.
func (e *Engine) prerender(ctx context.Context, ch *chart.Chart, archive []byte, values map[string]any, release common.ReleaseOptions, caps *common.Capabilities) error {
	valuesJSON, err := json.Marshal(values)
	if err != nil {
		return fmt.Errorf("values are not JSON-serialisable: %w", err)
	}
	if caps == nil {
		caps = common.DefaultCapabilities
	}
	r := ChartRender{Archive: archive, Annotations: ch.Metadata.Annotations, Values: valuesJSON, Release: release, Capabilities: *caps.Copy()}
	var files map[string]string
	if e.Renderer != nil {
		files, err = e.Renderer.RenderChart(ctx, r)
	} else {
		files, err = RenderChart(r)
	}
	if err != nil {
		return fmt.Errorf("rendering chart %s %s: %w", ch.Name(), ch.Metadata.Version, err)
	}
	replaceTemplates(ch, files)
	return nil
}

// replaceTemplates replaces every template of ch and its subcharts with its rendered text from
// files, escaped so that rendering it again yields that text (partials, which render nothing,
// and the templates of disabled subcharts are emptied).
func replaceTemplates(ch *chart.Chart, files map[string]string) {
	base := ch.ChartFullPath()
	for _, t := range ch.Templates {
		t.Data = []byte(literalTemplate(files[path.Join(base, t.Name)]))
	}
	for _, sub := range ch.Dependencies() {
		replaceTemplates(sub, files)
	}
}

// literalTemplate is a text/template that renders text: every "{{" in it becomes an action
// printing "{{".
func literalTemplate(text string) string {
	return strings.ReplaceAll(text, "{{", `{{"{{"}}`)
}
