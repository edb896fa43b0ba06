package metalsim

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/flotilla-dev/flotilla/infrastructure/packet/metal"
)

// BasePath is where the API is served, as on the public endpoint.
const BasePath = "/metal/v1"

// Options configure a Server.
type Options struct {
	// APIKey is the only key accepted in X-Auth-Token. Required.
	APIKey string
	// QueuedFor is how long a new device stays queued.
	QueuedFor time.Duration
	// ProvisioningFor is how long a device provisions before it is active (or failed).
	ProvisioningFor time.Duration
	// MaxDevicesPerProject is the device quota of every project; 0 means no quota. A create past
	// it is answered 429 with Retry-After QuotaRetryAfter.
	MaxDevicesPerProject int
	// QuotaRetryAfter is the Retry-After of a quota refusal; 60s when 0.
	QuotaRetryAfter time.Duration
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// Devices, when set, plays what runs on the devices: the simulator boots a device on it
	// once the device is active (QueuedFor+ProvisioningFor after its creation, on the wall
	// clock) and shuts it down when the device is deleted. Without it devices do not boot.
	Devices DeviceRuntime
}

// DeviceRuntime plays the operating system of simulated devices (package devicesim boots their
// cloud-init). Its methods must not block: they start or stop work and return.
type DeviceRuntime interface {
	// Boot starts device d, as the API shows it when it becomes active. current returns the
	// device as the API shows it now (its addresses change when an elastic IP is assigned),
	// and false once it is deleted.
	Boot(d metal.Device, current func() (metal.Device, bool))
	// Shutdown stops what runs on the device with id, which was deleted.
	Shutdown(id string)
}

// Server is the simulated API. Create it with New; it is an http.Handler.
type Server struct {
	opts Options
	mux  *http.ServeMux

	mu           sync.Mutex
	projects     map[string]*metal.Project
	devices      map[string]*device
	reservations map[string]*reservation
	assignments  map[string]*assignment
	faults       []*activeFault
	failing      []string
	stats        Stats
	nextPublic   int
	nextPrivate  int
	nextElastic  int
}

type device struct {
	metal.Device
	projectID string
	fails     bool
	// boot is the pending boot of the device on Options.Devices; nil without one.
	boot *time.Timer
}

type reservation struct {
	metal.IPReservation
	projectID string
}

type assignment struct {
	metal.IPAddress
	deviceID      string
	reservationID string
}

// Stats counts the requests the server answered.
type Stats struct {
	// Total is every request, including refused ones.
	Total int `json:"total"`
	// ByRoute counts requests per "METHOD pattern", such as "GET /metal/v1/devices/{id}".
	ByRoute map[string]int `json:"byRoute"`
	// ByPath counts requests per "METHOD path", such as "GET /metal/v1/devices/<id>".
	ByPath map[string]int `json:"byPath"`
	// Faults counts requests answered by an injected fault.
	Faults int `json:"faults"`
}

// New returns a simulator. It panics when opts.APIKey is empty: a simulator without
// authentication would hide a missing key in the code under test.
func New(opts Options) *Server {
	if opts.APIKey == "" {
		panic("metalsim: an API key is required")
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.QuotaRetryAfter == 0 {
		opts.QuotaRetryAfter = time.Minute
	}
	s := &Server{
		opts:         opts,
		projects:     map[string]*metal.Project{},
		devices:      map[string]*device{},
		reservations: map[string]*reservation{},
		assignments:  map[string]*assignment{},
		stats:        Stats{ByRoute: map[string]int{}, ByPath: map[string]int{}},
		nextElastic:  randomElasticStart(),
	}
	s.routes()
	return s
}

func (s *Server) routes() {
	s.mux = http.NewServeMux()
	handle := func(pattern string, h func(http.ResponseWriter, *http.Request) response) {
		method, path, _ := strings.Cut(pattern, " ")
		full := method + " " + BasePath + path
		s.mux.HandleFunc(full, func(w http.ResponseWriter, r *http.Request) { s.serve(w, r, full, h) })
	}
	handle("GET /projects", s.listProjects)
	handle("POST /projects", s.createProject)
	handle("GET /projects/{id}", s.getProject)
	handle("GET /projects/{id}/devices", s.listDevices)
	handle("POST /projects/{id}/devices", s.createDevice)
	handle("GET /devices/{id}", s.getDevice)
	handle("DELETE /devices/{id}", s.deleteDevice)
	handle("GET /projects/{id}/ips", s.listReservations)
	handle("POST /projects/{id}/ips", s.createReservation)
	handle("GET /ips/{id}", s.getIP)
	handle("DELETE /ips/{id}", s.deleteIP)
	handle("GET /devices/{id}/ips", s.listDeviceIPs)
	handle("POST /devices/{id}/ips", s.assignIP)

	s.mux.HandleFunc("GET /_sim/stats", s.authenticated(func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, s.Stats())
	}))
	s.mux.HandleFunc("POST /_sim/faults", s.authenticated(func(w http.ResponseWriter, r *http.Request) {
		var f Fault
		if err := json.NewDecoder(r.Body).Decode(&f); err != nil {
			writeJSON(w, http.StatusBadRequest, metal.ErrorResponse{Errors: []string{err.Error()}})
			return
		}
		s.InjectFault(f)
		w.WriteHeader(http.StatusNoContent)
	}))
	s.mux.HandleFunc("DELETE /_sim/faults", s.authenticated(func(w http.ResponseWriter, _ *http.Request) {
		s.ClearFaults()
		w.WriteHeader(http.StatusNoContent)
	}))
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// ListenAndServe serves the simulator on addr until ctx ends. ready, when not nil, is called
// with the address it listens on (useful with port 0).
func (s *Server) ListenAndServe(ctx context.Context, addr string, ready func(net.Addr)) error {
	var lc net.ListenConfig
	l, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", addr, err)
	}
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	if ready != nil {
		ready(l.Addr())
	}
	go func() {
		<-ctx.Done()
		shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdownCtx)
	}()
	if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// response is what a route handler decided: a status and a body, or an error.
type response struct {
	status     int
	body       any
	retryAfter time.Duration
}

func ok(body any) response      { return response{status: http.StatusOK, body: body} }
func created(body any) response { return response{status: http.StatusCreated, body: body} }
func noContent() response       { return response{status: http.StatusNoContent} }
func fail(status int, format string, args ...any) response {
	return response{status: status, body: metal.ErrorResponse{Errors: []string{fmt.Sprintf(format, args...)}}}
}

func (s *Server) authenticated(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(metal.AuthHeader) != s.opts.APIKey {
			writeJSON(w, http.StatusUnauthorized, metal.ErrorResponse{Errors: []string{"Invalid authentication token"}})
			return
		}
		h(w, r)
	}
}

// serve runs one API request: counting, authentication, faults, then the route.
func (s *Server) serve(w http.ResponseWriter, r *http.Request, route string, h func(http.ResponseWriter, *http.Request) response) {
	s.mu.Lock()
	s.stats.Total++
	s.stats.ByRoute[route]++
	s.stats.ByPath[r.Method+" "+r.URL.Path]++
	s.mu.Unlock()

	if r.Header.Get(metal.AuthHeader) != s.opts.APIKey {
		writeJSON(w, http.StatusUnauthorized, metal.ErrorResponse{Errors: []string{"Invalid authentication token"}})
		return
	}
	f := s.takeFault(r)
	if f != nil && f.Delay > 0 {
		select {
		case <-time.After(time.Duration(f.Delay)):
		case <-r.Context().Done():
			return
		}
	}
	if f != nil && f.Status != 0 && !f.AfterHandling {
		writeFault(w, f)
		return
	}
	s.mu.Lock()
	resp := h(w, r)
	s.mu.Unlock()
	if f != nil && f.Status != 0 {
		// The request took effect, but the client never learns it.
		writeFault(w, f)
		return
	}
	if resp.retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int((resp.retryAfter+time.Second-1)/time.Second)))
	}
	if resp.status == http.StatusNoContent || resp.body == nil {
		w.WriteHeader(resp.status)
		return
	}
	writeJSON(w, resp.status, resp.body)
}

func writeFault(w http.ResponseWriter, f *Fault) {
	if f.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int((time.Duration(f.RetryAfter)+time.Second-1)/time.Second)))
	}
	msg := f.Message
	if msg == "" {
		msg = http.StatusText(f.Status)
	}
	writeJSON(w, f.Status, metal.ErrorResponse{Errors: []string{msg}})
}

func writeJSON(w http.ResponseWriter, status int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

// Stats returns a copy of the request counts.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := Stats{Total: s.stats.Total, Faults: s.stats.Faults, ByRoute: maps.Clone(s.stats.ByRoute), ByPath: maps.Clone(s.stats.ByPath)}
	return out
}

// ResetStats sets the request counts to zero.
func (s *Server) ResetStats() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stats = Stats{ByRoute: map[string]int{}, ByPath: map[string]int{}}
}

// Devices returns the devices of a project, as the API lists them.
func (s *Server) Devices(projectID string) []metal.Device {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []metal.Device
	for _, d := range s.sortedDevices() {
		if d.projectID == projectID {
			out = append(out, s.render(d))
		}
	}
	return out
}

// Device returns the device with id as the API shows it, and whether it exists.
func (s *Server) Device(id string) (metal.Device, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, found := s.devices[id]
	if !found {
		return metal.Device{}, false
	}
	return s.render(d), true
}

// IPReservations returns the IP reservations of a project.
func (s *Server) IPReservations(projectID string) []metal.IPReservation {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []metal.IPReservation
	for _, r := range s.sortedReservations() {
		if r.projectID == projectID {
			out = append(out, r.IPReservation)
		}
	}
	return out
}

// randomElasticStart is where a simulator starts numbering elastic IPs: a random multiple of 8,
// the largest block one reservation takes.
func randomElasticStart() int {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	n := int(b[0])<<16 | int(b[1])<<8 | int(b[2])
	return (n % (elasticSpace / 8)) * 8
}

func newID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// ensureProject returns the project with id, creating it on first use. Must hold mu.
func (s *Server) ensureProject(id string) *metal.Project {
	p, ok := s.projects[id]
	if !ok {
		p = &metal.Project{ID: id, Name: "project-" + id, CreatedAt: s.opts.Now().UTC(), Href: BasePath + "/projects/" + id}
		s.projects[id] = p
	}
	return p
}

func (s *Server) sortedDevices() []*device {
	return byCreation(s.devices, func(d *device) (time.Time, string) { return d.CreatedAt, d.ID })
}

func (s *Server) sortedReservations() []*reservation {
	return byCreation(s.reservations, func(r *reservation) (time.Time, string) { return r.CreatedAt, r.ID })
}

// byCreation returns the objects of m oldest first, as the API lists them (ties by ID).
func byCreation[T any](m map[string]*T, key func(*T) (time.Time, string)) []*T {
	out := slices.Collect(maps.Values(m))
	slices.SortFunc(out, func(a, b *T) int {
		at, aID := key(a)
		bt, bID := key(b)
		if c := at.Compare(bt); c != 0 {
			return c
		}
		return strings.Compare(aID, bID)
	})
	return out
}

// paginate cuts items to the page the request asks for (page, per_page; 10 per page by default,
// as the API) and returns the pagination block.
func paginate[T any](r *http.Request, items []T) ([]T, metal.Meta) {
	perPage, err := strconv.Atoi(r.URL.Query().Get("per_page"))
	if err != nil || perPage <= 0 {
		perPage = 10
	}
	perPage = min(perPage, 1000)
	page, err := strconv.Atoi(r.URL.Query().Get("page"))
	if err != nil || page <= 0 {
		page = 1
	}
	last := max((len(items)+perPage-1)/perPage, 1)
	start := min((page-1)*perPage, len(items))
	end := min(start+perPage, len(items))
	meta := metal.Meta{Total: len(items), CurrentPage: page, LastPage: last}
	if page < last {
		q := r.URL.Query()
		q.Set("page", strconv.Itoa(page+1))
		meta.Next = &metal.Href{Href: r.URL.Path + "?" + q.Encode()}
	}
	return items[start:end], meta
}
