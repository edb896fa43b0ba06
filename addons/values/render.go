package values

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/flotilla-dev/flotilla/pkg/tether"
)

// The limits of one render (see the package documentation and
// docs/proposals/2026-11-25-bounded-values-templates.md).
const (
	// RenderTimeLimit is how long one render may take, from the moment its worker receives it.
	RenderTimeLimit = 500 * time.Millisecond
	// RenderMemoryLimit is how much memory a render worker may take beyond what it holds when it
	// starts.
	RenderMemoryLimit = 256 << 20
	// renderWorkers is how many renders run at once (each in a worker process of its own).
	renderWorkers = 4
	// workerStartLimit is how long a worker may take to start: it takes about 0.2 s on a busy
	// machine; one that needs more is too busy to render (ErrRenderStarved).
	workerStartLimit = 10 * time.Second
)

// Errors of a render stopped at one of its limits; the message says which and what to look for.
var (
	ErrRenderTimeLimit = fmt.Errorf("valuesTemplate: rendering was stopped after %s: "+
		"look for a range over a huge list or ranges nested deep", RenderTimeLimit)
	ErrRenderMemoryLimit = fmt.Errorf("valuesTemplate: rendering was stopped when it needed more than %d MiB of memory: "+
		"look for until, repeat or strings built in a range", RenderMemoryLimit>>20)
	ErrRenderRecursion = errors.New("valuesTemplate: rendering was stopped: templates call each other too deep " +
		"(a template that includes itself?)")
	// ErrRenderStarved is wrapped by the error of a render that the machine was too busy to run:
	// it met RenderTimeLimit having had less than starvedCPU of CPU time, or its worker did not
	// start within workerStartLimit. Nothing is known about the template: render it again later.
	ErrRenderStarved = errors.New("valuesTemplate: this machine is too busy to render it now")
	// ErrRenderWorkerFailed is wrapped by the error of a render whose worker failed for no
	// reason of the template's: it could not start, or it died other than at a limit (killed
	// from outside, its pipe broken). Render it again later.
	ErrRenderWorkerFailed = errors.New("valuesTemplate: a render worker failed")
)

// RenderAgain reports whether err is that of a render which did not run to its end for a reason
// outside the template (ErrRenderStarved, ErrRenderWorkerFailed, or the same of a chart):
// nothing is known about the template, and rendering it again later may well succeed.
func RenderAgain(err error) bool {
	return errors.Is(err, ErrRenderStarved) || errors.Is(err, ErrRenderWorkerFailed) ||
		errors.Is(err, ErrChartRenderStarved) || errors.Is(err, ErrChartRenderWorkerFailed)
}

// limits are the bounds of the renders of a pool, and the errors of a render stopped at one.
type limits struct {
	// subject is what the pool renders, as errors name it.
	subject string
	// time is how long one render may take, from the moment its worker receives it.
	time time.Duration
	// memory is how much memory a worker may take beyond what it holds when it starts.
	memory int64
	// The errors of a render stopped at the time limit, the memory limit, the stack limit; of a
	// render starved of CPU, and of one whose worker failed otherwise (wrapped).
	errTime, errMemory, errRecursion, errStarved, errFailed error
}

// starvedCPU is the CPU time under which a render stopped at its time limit was starved rather
// than running away.
func (l limits) starvedCPU() time.Duration { return l.time / 20 }

// valuesLimits bound the renders of values templates.
var valuesLimits = limits{
	subject: "the valuesTemplate",
	time:    RenderTimeLimit, memory: RenderMemoryLimit,
	errTime: ErrRenderTimeLimit, errMemory: ErrRenderMemoryLimit, errRecursion: ErrRenderRecursion,
	errStarved: ErrRenderStarved, errFailed: ErrRenderWorkerFailed,
}

// Render renders a values template with data and returns the values as canonical YAML (sorted
// keys; "" when the template renders no values). Its errors say on which line of the template
// the problem is, and what it is.
//
// The template runs in a render worker, a child process of this one, which is killed when the
// render takes longer than RenderTimeLimit or needs more than RenderMemoryLimit: the error is
// then ErrRenderTimeLimit, ErrRenderMemoryLimit or ErrRenderRecursion, and this process is left
// as it was. Render may be called concurrently.
func Render(ctx context.Context, text string, data Data) (string, error) {
	return workers.render(ctx, request{Template: text, Data: data})
}

// RenderText renders a template as Render does, with its functions and limits, and returns the
// text as rendered instead of values: a post-render patch, which may be a list of operations.
func RenderText(ctx context.Context, text string, data Data) (string, error) {
	return workers.render(ctx, request{Template: text, Data: data, Text: true})
}

// workers runs every render of a values template of this process.
var workers = &pool{size: renderWorkers, limits: valuesLimits}

// pool runs renders in at most size worker processes at once, keeping the idle ones for the
// next renders: starting a worker costs far more than a render.
type pool struct {
	size   int
	limits limits
	once   sync.Once
	slots  chan struct{}

	mu   sync.Mutex
	idle []*worker
}

func (p *pool) render(ctx context.Context, req request) (string, error) {
	resp, err := p.do(ctx, req)
	return resp.Values, err
}

// do has a worker answer req.
func (p *pool) do(ctx context.Context, req request) (response, error) {
	p.once.Do(func() { p.slots = make(chan struct{}, p.size) })
	select {
	case p.slots <- struct{}{}:
	case <-ctx.Done():
		return response{}, fmt.Errorf("waiting for a render worker: %w", ctx.Err())
	}
	defer func() { <-p.slots }()

	w := p.take()
	if w == nil {
		var err error
		if w, err = startWorker(ctx, p.limits); err != nil {
			return response{}, err
		}
	}
	resp, err := w.exchange(ctx, req)
	if err != nil {
		// The worker is gone: its successor starts now rather than delay the next render (it
		// outlives this render, hence not ctx's cancellation).
		go p.replace(context.WithoutCancel(ctx))
		return response{}, err
	}
	if resp.Retire {
		w.stop()
	} else {
		p.put(w)
	}
	if resp.Error != "" {
		return response{}, errors.New(resp.Error)
	}
	return resp, nil
}

// replace starts a worker and keeps it idle, unless size workers are idle already.
func (p *pool) replace(ctx context.Context) {
	w, err := startWorker(ctx, p.limits)
	if err != nil {
		return // the next render starts one, and reports why it cannot
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.idle) >= p.size {
		w.stop()
		return
	}
	p.idle = append(p.idle, w)
}

func (p *pool) take() *worker {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n := len(p.idle); n > 0 {
		w := p.idle[n-1]
		p.idle = p.idle[:n-1]
		return w
	}
	return nil
}

func (p *pool) put(w *worker) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.idle = append(p.idle, w)
}

// worker is a render worker process, seen from this one.
type worker struct {
	cmd       *exec.Cmd
	requests  *os.File // this process's end of the requests pipe
	responses *os.File // and of the responses pipe
	codec     *codec
	stderr    *headBuffer
	limits    limits
	exited    chan struct{} // closed once the process has exited and been waited for
	// cpu is the CPU time the worker had used when it last answered.
	cpu time.Duration
}

// startWorker starts a worker (this program run again, see worker.go) with the memory limit of
// l and waits until it is ready: its limits set, its first message sent.
func startWorker(ctx context.Context, l limits) (*worker, error) {
	if !canServe.Load() {
		return nil, fmt.Errorf("%w to start: %w", l.errFailed, errNoWorker)
	}
	reqR, reqW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("%w to start: %w", l.errFailed, err)
	}
	respR, respW, err := os.Pipe()
	if err != nil {
		closeAll(reqR, reqW)
		return nil, fmt.Errorf("%w to start: %w", l.errFailed, err)
	}
	cmd := exec.Command(selfExecutable(), workerArg)
	// Only what the worker needs: nothing of this process's environment (credentials) reaches it.
	cmd.Env = []string{workerEnv + "=" + workerArg, workerMemoryEnv + "=" + strconv.FormatInt(l.memory, 10), "GOMAXPROCS=1", "GOTRACEBACK=single"}
	cmd.Dir = "/"
	cmd.ExtraFiles = []*os.File{reqR, respW} // fds 3 and 4 of the worker
	w := &worker{cmd: cmd, requests: reqW, responses: respR, stderr: &headBuffer{max: 4096}, limits: l, exited: make(chan struct{})}
	cmd.Stderr = w.stderr
	// The kernel kills a worker whose parent dies, so none outlives the manager; elsewhere than
	// on Linux a worker ends when its requests pipe closes, which it does when this process exits.
	err = tether.Start(cmd)
	closeAll(reqR, respW) // the worker's ends
	if err != nil {
		closeAll(reqW, respR)
		return nil, fmt.Errorf("%w to start: %w", l.errFailed, err)
	}
	go func() {
		_ = cmd.Wait()
		close(w.exited)
	}()
	w.codec = newCodec(respR, reqW)
	ready := make(chan error, 1)
	go func() {
		var hello response
		err := w.codec.receive(&hello)
		w.cpu = hello.CPU
		ready <- err
	}()
	timer := time.NewTimer(workerStartLimit)
	defer timer.Stop()
	select {
	case err = <-ready:
	case <-timer.C:
		w.kill()
		return nil, fmt.Errorf("%w: a render worker did not start within %s", l.errStarved, workerStartLimit)
	case <-ctx.Done():
		w.kill()
		return nil, fmt.Errorf("waiting for a render worker to start: %w", ctx.Err())
	}
	if err != nil {
		w.kill()
		return nil, fmt.Errorf("%w to start: %w%s", l.errFailed, err, w.stderr.firstLine(": "))
	}
	return w, nil
}

// exchange sends req and returns the worker's response. When the response does not come within
// the time limit, or ctx ends first, or the worker dies, the worker is killed and the error
// says why; the worker must not be used again then.
func (w *worker) exchange(ctx context.Context, req request) (response, error) {
	type result struct {
		resp response
		err  error
	}
	done := make(chan result, 1)
	go func() {
		var r result
		if r.err = w.codec.send(req); r.err == nil {
			r.err = w.codec.receive(&r.resp)
		}
		done <- r
	}()
	timer := time.NewTimer(w.limits.time)
	defer timer.Stop()
	select {
	case r := <-done:
		if r.err == nil {
			w.cpu = r.resp.CPU
			return r.resp, nil
		}
		w.kill()
		return response{}, w.death(r.err)
	case <-timer.C:
		w.kill()
		<-done
		if cpu := w.renderCPU(); cpu < w.limits.starvedCPU() {
			return response{}, fmt.Errorf("%w: rendering was stopped after %s having had %s of CPU time",
				w.limits.errStarved, w.limits.time, cpu.Round(time.Millisecond))
		}
		return response{}, w.limits.errTime
	case <-ctx.Done():
		w.kill()
		<-done
		return response{}, fmt.Errorf("rendering %s: %w", w.limits.subject, ctx.Err())
	}
}

// death says why the worker died in the middle of a render, from what the Go runtime printed.
func (w *worker) death(err error) error {
	head := w.stderr.String()
	switch {
	case strings.Contains(head, "out of memory"):
		return w.limits.errMemory
	case strings.Contains(head, "stack exceeds"), strings.Contains(head, "stack overflow"):
		return w.limits.errRecursion
	case w.cmd.ProcessState != nil && exceededCPU(w.cmd.ProcessState):
		return w.limits.errTime
	}
	return fmt.Errorf("%w: it stopped unexpectedly (%w)%s", w.limits.errFailed, err, w.stderr.firstLine(": "))
}

// renderCPU is the CPU time a killed worker spent on its last render.
func (w *worker) renderCPU() time.Duration {
	u, ok := w.cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		return w.limits.time // unknown: count the render as having run
	}
	return time.Duration(u.Utime.Nano()+u.Stime.Nano()) - w.cpu
}

// exceededCPU: the kernel killed the worker for using up its CPU time.
func exceededCPU(state *os.ProcessState) bool {
	ws, ok := state.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGXCPU
}

// kill ends the worker at once and waits until it is gone.
func (w *worker) kill() {
	_ = w.cmd.Process.Kill()
	<-w.exited
	closeAll(w.requests, w.responses)
}

// stop lets an idle worker end: it exits when its requests pipe closes.
func (w *worker) stop() {
	closeAll(w.requests)
	go func() {
		timer := time.NewTimer(workerStartLimit)
		defer timer.Stop()
		select {
		case <-w.exited:
		case <-timer.C:
			_ = w.cmd.Process.Kill()
		}
		closeAll(w.responses)
	}()
}

func closeAll(files ...*os.File) {
	for _, f := range files {
		_ = f.Close()
	}
}

// headBuffer keeps the first max bytes written to it: where the Go runtime says why it died.
type headBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (b *headBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := b.max - len(b.buf); room > 0 {
		b.buf = append(b.buf, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (b *headBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}

// firstLine returns prefix and the first line written, or "" when nothing was.
func (b *headBuffer) firstLine(prefix string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(b.String()), "\n")
	if line == "" {
		return ""
	}
	return prefix + line
}
