package values

import (
	"context"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/flotilla-dev/flotilla/internal/proctest"
	"github.com/flotilla-dev/flotilla/pkg/process"
)

// runawayTemplates would each hold a core or exhaust memory for minutes to hours if nothing
// bounded them.
var runawayTemplates = []struct {
	name, template string
	// memory: the template allocates; it may meet either limit first, depending on how fast
	// the machine hands out memory.
	memory bool
}{
	{name: "until allocating a slice of two billion ints", template: `{{ range until 2000000000 }}{{ end }}`, memory: true},
	{name: "untilStep allocating as much", template: `a: {{ len (untilStep 0 2000000000 1) }}`, memory: true},
	{name: "a string doubled forty times", template: `{{ $s := "x" }}{{ range until 40 }}{{ $s = print $s $s }}{{ end }}a: {{ len $s }}`, memory: true},
	{name: "repeat building two gigabytes", template: `a: {{ repeat 2000000000 "x" | len }}`, memory: true},
	{name: "ranges nested four deep with empty bodies", template: `{{ range until 1000 }}{{ range until 1000 }}{{ range until 1000 }}{{ range until 1000 }}{{ end }}{{ end }}{{ end }}{{ end }}`},
	{name: "a range over a huge integer", template: `{{ range 100000000000 }}{{ end }}`},
	{name: "a template calling itself twice thirty levels deep", template: `{{ define "t" }}{{ if lt . 30 }}{{ template "t" (add . 1) }}{{ template "t" (add . 1) }}{{ end }}{{ end }}{{ template "t" 0 }}`},
	{name: "regexes built in a range", template: `{{ range 100000000 }}{{ $_ := regexMatch "(a+)+b" "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" }}{{ end }}`},
}

func TestRunawayTemplatesFailFastAndLeaveTheProcessAsItWas(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	// A worker is started before: starting one is not part of a render's time.
	g.Expect(renderTrivial()).To(Succeed())

	for _, tt := range runawayTemplates {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			start := time.Now()
			_, err := Render(ctx, tt.template, testData())
			elapsed := time.Since(start)
			// On a machine too busy to give the worker any CPU, the render is starved instead.
			if tt.memory {
				g.Expect(err).To(Or(MatchError(ErrRenderMemoryLimit), MatchError(ErrRenderTimeLimit), MatchError(ErrRenderStarved)))
			} else {
				g.Expect(err).To(Or(MatchError(ErrRenderTimeLimit), MatchError(ErrRenderStarved)))
			}
			g.Expect(elapsed).To(BeNumerically("<", time.Second))

			// The next render works, in a worker started again when needed.
			g.Expect(Render(ctx, "name: {{ .Cluster.metadata.name }}", testData())).To(Equal("name: w1\n"))
			// The worker that ran away is gone: only idle workers are left, and no goroutine of
			// this process waits for it any more.
			// (A worker replacing it may still be starting.)
			g.Eventually(func(g Gomega) {
				g.Expect(proctest.Children(t, workerArg)).To(HaveLen(idleWorkers()))
				g.Expect(goroutinesIn("values.(*worker).exchange")).To(BeZero())
				g.Expect(goroutinesIn("values.startWorker.func")).To(Equal(idleWorkers()))
			}, 10*time.Second).Should(Succeed())
		})
	}
}

func TestARenderStarvedOfCPUSaysSoAndTheNextOneWorks(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	// The one idle worker gets no CPU at all, as on a machine far too busy.
	stopped := theIdleWorkerAfter(g, renderTrivial).cmd.Process.Pid
	g.Expect(syscall.Kill(stopped, syscall.SIGSTOP)).To(Succeed())

	_, err := Render(ctx, "name: {{ .Cluster.metadata.name }}", testData())
	g.Expect(err).To(MatchError(ErrRenderStarved))
	g.Expect(proctest.Children(t, workerArg)).NotTo(ContainElement(stopped))
	g.Expect(Render(ctx, "name: {{ .Cluster.metadata.name }}", testData())).To(Equal("name: w1\n"))
}

// A worker killed from outside fails its render with an error that says to render it again, and
// the next render works; a template's own error does not say so.
func TestARenderWhoseWorkerWasKilledIsToBeRenderedAgain(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	killed := theIdleWorkerAfter(g, renderTrivial)
	g.Expect(killed.cmd.Process.Kill()).To(Succeed())
	<-killed.exited

	_, err := Render(ctx, "name: {{ .Cluster.metadata.name }}", testData())
	g.Expect(err).To(MatchError(ErrRenderWorkerFailed))
	g.Expect(err).To(MatchError(ContainSubstring("stopped unexpectedly")))
	g.Expect(RenderAgain(err)).To(BeTrue())
	g.Expect(Render(ctx, "name: {{ .Cluster.metadata.name }}", testData())).To(Equal("name: w1\n"))

	_, err = Render(ctx, "name: {{ .Cluster.metadata.nme.x }}", testData())
	g.Expect(err).To(HaveOccurred())
	g.Expect(RenderAgain(err)).To(BeFalse(), "a template's own error: %v", err)
}

// A worker lives as long as this process, whichever thread started it. The manager ends threads
// it moved into other namespaces (process.InThread); workers started by those threads were
// killed with them, and the renders that used them failed.
func TestAWorkerOutlivesTheThreadThatStartedIt(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	worker := theIdleWorkerAfter(g, func() error { return process.InThread(renderTrivial) })

	g.Consistently(worker.exited, time.Second).ShouldNot(BeClosed(), "the worker was killed with the thread that started it")
	g.Expect(Render(ctx, "name: {{ .Cluster.metadata.name }}", testData())).To(Equal("name: w1\n"))
}

func TestATemplateIncludingItselfWithoutEndIsStopped(t *testing.T) {
	g := NewWithT(t)
	_, err := Render(context.Background(), `{{ define "t" }}{{ template "t" . }}{{ end }}{{ template "t" . }}`, testData())
	// text/template stops at its own depth limit, or the stack limit stops the worker first, or
	// (on a busy machine) the time limit does.
	g.Expect(err).To(Or(MatchError(ContainSubstring("exceeded maximum template depth")), MatchError(ErrRenderRecursion),
		MatchError(ErrRenderTimeLimit), MatchError(ErrRenderStarved)))
}

func TestValuesThatExpandBeyondTheLimitAreRefused(t *testing.T) {
	g := NewWithT(t)
	// 40 KiB of text whose anchors expand to 40 MiB when the values are encoded again.
	var b strings.Builder
	b.WriteString("a: &a [" + strings.Repeat(`"xxxxxxxxxx",`, 1000) + "]\n")
	b.WriteString("b: [" + strings.Repeat("*a,", 1000) + "]\n")
	_, err := Render(context.Background(), b.String(), testData())
	g.Expect(err).To(HaveOccurred())
	g.Expect(err.Error()).To(Or(ContainSubstring("exceed 1048576 bytes"), ContainSubstring("excessive aliasing"), HavePrefix("valuesTemplate: rendering was stopped")))
}

func TestARenderCanceledByItsContextStopsItsWorker(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := Render(ctx, `{{ range 100000000000 }}{{ end }}`, testData())
	g.Expect(err).To(MatchError(context.DeadlineExceeded))
	g.Eventually(func(g Gomega) {
		g.Expect(proctest.Children(t, workerArg)).To(HaveLen(idleWorkers()))
	}, 10*time.Second).Should(Succeed(), "a worker replacing the one stopped may be starting")
}

// goroutinesIn counts the goroutines whose stack holds function.
func goroutinesIn(function string) int {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for _, stack := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(stack, function) {
			n++
		}
	}
	return n
}

// stopIdleWorkers waits until no worker is starting (replacing one that was killed), then stops
// the idle ones.
func stopIdleWorkers(g Gomega) {
	g.Eventually(func(g Gomega) {
		g.Expect(goroutinesIn("values.startWorker.func")).To(Equal(idleWorkers()))
	}, 10*time.Second).Should(Succeed())
	for w := workers.take(); w != nil; w = workers.take() {
		w.stop()
	}
	g.Eventually(func() int { return goroutinesIn("values.startWorker.func") }, 10*time.Second).Should(BeZero())
}

// renderTrivial renders a template that needs nothing, in a worker.
func renderTrivial() error {
	_, err := Render(context.Background(), "a: 1", Data{})
	return err
}

// theIdleWorkerAfter stops the idle workers, runs render, which must succeed, and returns the
// one worker it left idle.
func theIdleWorkerAfter(g Gomega, render func() error) *worker {
	stopIdleWorkers(g)
	g.Expect(render()).To(Succeed())
	workers.mu.Lock()
	defer workers.mu.Unlock()
	g.Expect(workers.idle).To(HaveLen(1))
	return workers.idle[0]
}

func idleWorkers() int {
	workers.mu.Lock()
	defer workers.mu.Unlock()
	return len(workers.idle)
}

// The cost of bounding a render: BenchmarkRender renders in a worker, as Render always does;
// BenchmarkExecuteInProcess renders the same in this process, unbounded, for comparison.
const benchmarkTemplate = "greeting: Hello {{ .Cluster.metadata.name }}\nenv: {{ index .Cluster.metadata.labels \"env\" | default \"dev\" }}\n"

func BenchmarkRender(b *testing.B) {
	ctx := context.Background()
	data := testData()
	for b.Loop() {
		if _, err := Render(ctx, benchmarkTemplate, data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkExecuteInProcess(b *testing.B) {
	data := testData()
	for b.Loop() {
		if _, err := execute(benchmarkTemplate, data); err != nil {
			b.Fatal(err)
		}
	}
}

func TestAProgramThatDidNotCallRunWorkerIfRequestedStartsNoWorker(t *testing.T) {
	g := NewWithT(t)
	canServe.Store(false)
	defer canServe.Store(true)
	_, err := startWorker(t.Context(), valuesLimits)
	g.Expect(err).To(MatchError(errNoWorker))
	g.Expect(err).To(MatchError(ErrRenderWorkerFailed))
}
