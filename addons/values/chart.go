package values

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/flotilla-dev/flotilla/pkg/helm"
)

// The limits of one render of a chart's templates, in the same render workers as values
// templates (see the package documentation).
const (
	// ChartRenderTimeLimit is how long rendering one chart's templates may take; the largest
	// public charts render in about a second on a busy machine.
	ChartRenderTimeLimit = 20 * time.Second
	// ChartRenderMemoryLimit is how much memory a worker rendering charts may take beyond what it
	// holds when it starts.
	ChartRenderMemoryLimit = 512 << 20
	// chartRenderWorkers is how many charts render at once.
	chartRenderWorkers = 2
)

// Errors of a chart render stopped at one of its limits; the message says which and what to look
// for.
var (
	ErrChartRenderTimeLimit = fmt.Errorf("chart templates: rendering was stopped after %s: "+
		"look for a range over a huge list or ranges nested deep in the chart's templates", ChartRenderTimeLimit)
	ErrChartRenderMemoryLimit = fmt.Errorf("chart templates: rendering was stopped when it needed more than %d MiB of memory: "+
		"look for until, repeat or strings built in a range in the chart's templates", ChartRenderMemoryLimit>>20)
	ErrChartRenderRecursion = errors.New("chart templates: rendering was stopped: templates call each other too deep " +
		"(a template that includes itself?)")
	// ErrChartRenderStarved: as ErrRenderStarved, for a chart.
	ErrChartRenderStarved = errors.New("chart templates: this machine is too busy to render them now")
	// ErrChartRenderWorkerFailed: as ErrRenderWorkerFailed, for a chart.
	ErrChartRenderWorkerFailed = errors.New("chart templates: a render worker failed")
)

// chartWorkers runs every render of a chart's templates of this process.
var chartWorkers = &pool{size: chartRenderWorkers, limits: limits{
	subject: "the chart's templates",
	time:    ChartRenderTimeLimit, memory: ChartRenderMemoryLimit,
	errTime: ErrChartRenderTimeLimit, errMemory: ErrChartRenderMemoryLimit, errRecursion: ErrChartRenderRecursion,
	errStarved: ErrChartRenderStarved, errFailed: ErrChartRenderWorkerFailed,
}}

// ChartRenderer renders charts' templates (helm.RenderChart) in render workers, bounded by
// ChartRenderTimeLimit and ChartRenderMemoryLimit as values templates are by theirs: the Helm
// engine of the manager renders every chart of packages and addons through it.
type ChartRenderer struct{}

var _ helm.ChartRenderer = ChartRenderer{}

// RenderChart renders r in a render worker; a render stopped at a limit is
// ErrChartRenderTimeLimit, ErrChartRenderMemoryLimit or ErrChartRenderRecursion, and this
// process is left as it was.
func (ChartRenderer) RenderChart(ctx context.Context, r helm.ChartRender) (map[string]string, error) {
	resp, err := chartWorkers.do(ctx, request{Chart: &r})
	return resp.Files, err
}
