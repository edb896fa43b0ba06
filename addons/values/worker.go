package values

import (
	"bufio"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/flotilla-dev/flotilla/pkg/helm"
)

// A render worker is the program that renders run again, with workerArg as its only argument and
// workerEnv set to workerArg. RunWorkerIfRequested, which the main of every program that renders
// calls first (TestMain in tests), turns such a process into a worker, so every program that
// renders serves as its own worker; there is no other program to install. The worker reads
// requests from fd 3 and writes responses to fd 4, gob-encoded, one at a time; it first sends an
// empty response once its limits are set. It exits when fd 3 closes.
const (
	workerArg = "__flotilla-values-render-worker"
	workerEnv = "FLOTILLA_VALUES_RENDER_WORKER"
	// workerMemoryEnv is the worker's memory limit in bytes (limits.memory of its pool).
	workerMemoryEnv = "FLOTILLA_RENDER_WORKER_MEMORY"
)

// Limits a worker sets on itself, on top of the memory limit.
const (
	// workerMaxStack bounds a goroutine's stack: templates that include each other without end
	// stop well before the memory limit.
	workerMaxStack = 64 << 20
	// workerCPULimit is the CPU time (RLIMIT_CPU) at which the kernel kills a worker, should
	// this process fail to kill it at RenderTimeLimit.
	workerCPULimit = 60 * time.Second
	// workerRetireCPU is the CPU time after which a worker retires after its render, so that no
	// render meets workerCPULimit.
	workerRetireCPU = workerCPULimit / 2
)

// request asks a worker to render Template with Data, or Chart.
type request struct {
	Template string
	Data     Data
	// Text asks for the rendered text as it is, not parsed as values (RenderText).
	Text bool
	// Chart asks for a chart's templates rendered (RenderChart).
	Chart *helm.ChartRender
}

// response is a worker's answer: the values (or a chart's rendered templates), or the
// template's error as users read it.
type response struct {
	Values string
	Files  map[string]string
	Error  string
	// CPU is the CPU time the worker has used so far.
	CPU time.Duration
	// Retire: the worker exits once it has sent this response.
	Retire bool
}

// RunWorkerIfRequested makes this process a render worker, and exits once its work is done, when
// a render started it as one; otherwise it returns at once. The main of every program that
// renders calls it before anything else (cmd/flotilla's main, and the TestMain of the tests that
// render): a worker must not run the program's own work. A program that has not called it
// cannot render: Render fails with ErrRenderWorkerFailed saying so, rather than start a copy of
// the program that does not know it is a worker.
func RunWorkerIfRequested() {
	if len(os.Args) == 2 && os.Args[1] == workerArg && os.Getenv(workerEnv) == workerArg {
		os.Exit(serveWorker(os.NewFile(3, "requests"), os.NewFile(4, "responses")))
	}
	canServe.Store(true)
}

// canServe is set once this program has called RunWorkerIfRequested: it can serve as its own
// render worker.
var canServe atomic.Bool

// errNoWorker is why a program that did not call RunWorkerIfRequested cannot render.
var errNoWorker = errors.New("this program cannot serve as its own render worker: " +
	"its main (TestMain in a test) must call values.RunWorkerIfRequested first")

// registerTypes registers with gob what the content of a cluster's objects, as the API server
// returns it, is made of.
var registerTypes = sync.OnceFunc(func() {
	gob.Register(map[string]any{})
	gob.Register([]any{})
})

// serveWorker sets the worker's limits and renders the requests from in until it closes.
func serveWorker(in io.Reader, out io.Writer) int {
	memory, err := strconv.ParseInt(os.Getenv(workerMemoryEnv), 10, 64)
	if err != nil || memory <= 0 {
		memory = RenderMemoryLimit
	}
	if err := limitWorker(memory, workerCPULimit); err != nil {
		fmt.Fprintf(os.Stderr, "render worker: %v\n", err)
		return 1
	}
	debug.SetMaxStack(workerMaxStack)
	debug.SetMemoryLimit(memory) // the GC works harder before the hard limit
	c := newCodec(in, out)
	if err := c.send(response{CPU: cpuTime()}); err != nil {
		return 1
	}
	for {
		var req request
		if err := c.receive(&req); err != nil {
			if errors.Is(err, io.EOF) {
				return 0
			}
			fmt.Fprintf(os.Stderr, "render worker: reading a request: %v\n", err)
			return 1
		}
		resp, err := serve(req)
		cpu := cpuTime()
		resp.CPU, resp.Retire = cpu, cpu > workerRetireCPU
		if err != nil {
			resp.Error = err.Error()
		}
		if err := c.send(resp); err != nil {
			return 1
		}
		if resp.Retire {
			return 0
		}
	}
}

// serve answers one request.
func serve(req request) (response, error) {
	if req.Chart != nil {
		files, err := helm.RenderChart(*req.Chart)
		return response{Files: files}, err
	}
	run := execute
	if req.Text {
		run = executeText
	}
	values, err := run(req.Template, req.Data)
	return response{Values: values}, err
}

// limitWorker limits this process's memory (see limitAddressSpace) and its CPU time to cpu
// (RLIMIT_CPU: the kernel kills it with SIGXCPU).
func limitWorker(memory int64, cpu time.Duration) error {
	if err := limitAddressSpace(memory); err != nil {
		return err
	}
	secs := uint64(cpu / time.Second) //nolint:gosec // cpu is a positive constant
	if err := syscall.Setrlimit(syscall.RLIMIT_CPU, &syscall.Rlimit{Cur: secs, Max: secs + 1}); err != nil {
		return fmt.Errorf("limiting the CPU time: %w", err)
	}
	return nil
}

// cpuTime is the CPU time this process has used.
func cpuTime() time.Duration {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		return 0
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}

// codec sends and receives the messages between this process and a worker.
type codec struct {
	enc *gob.Encoder
	w   *bufio.Writer
	dec *gob.Decoder
}

func newCodec(r io.Reader, w io.Writer) *codec {
	registerTypes()
	bw := bufio.NewWriter(w)
	return &codec{enc: gob.NewEncoder(bw), w: bw, dec: gob.NewDecoder(bufio.NewReader(r))}
}

func (c *codec) send(msg any) error {
	if err := c.enc.Encode(msg); err != nil {
		return err
	}
	return c.w.Flush()
}

func (c *codec) receive(msg any) error {
	return c.dec.Decode(msg)
}
