package metal_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/flotilla-dev/flotilla/infrastructure/packet/metal"
	"github.com/flotilla-dev/flotilla/infrastructure/packet/metalsim"
)

const (
	apiKey  = "test-key"
	project = "3a0b6b4e-0000-4000-8000-000000000001"
)

// clock is a settable clock for the simulator.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// sleeps records the waits between attempts instead of sleeping.
type sleeps struct {
	mu    sync.Mutex
	waits []time.Duration
}

func (s *sleeps) sleep(_ context.Context, d time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.waits = append(s.waits, d)
	return nil
}

func (s *sleeps) all() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.waits...)
}

type fixture struct {
	sim    *metalsim.Server
	client *metal.Client
	clock  *clock
	sleeps *sleeps
	url    string
}

func newFixture(t *testing.T, opts metalsim.Options, retry metal.Retry) *fixture {
	t.Helper()
	f := &fixture{clock: &clock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}, sleeps: &sleeps{}}
	opts.APIKey = apiKey
	opts.Now = f.clock.Now
	f.sim = metalsim.New(opts)
	srv := httptest.NewServer(f.sim)
	t.Cleanup(srv.Close)
	f.url = srv.URL + metalsim.BasePath
	var err error
	f.client, err = metal.New(metal.Options{BaseURL: f.url, APIKey: apiKey, Retry: retry, Sleep: f.sleeps.sleep})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func deviceRequest(hostname string) metal.DeviceCreateRequest {
	return metal.DeviceCreateRequest{
		Hostname: hostname, Plan: "c3.small.x86", Metro: "da", OperatingSystem: "ubuntu_24_04",
		BillingCycle: "hourly", Userdata: "#cloud-config\n", Tags: []string{"cluster:demo"},
	}
}

func TestADeviceIsCreatedOnceAndMovesFromQueuedToActive(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t, metalsim.Options{QueuedFor: 2 * time.Second, ProvisioningFor: 5 * time.Second}, metal.Retry{})
	ctx := context.Background()

	d, created, err := f.client.EnsureDevice(ctx, project, "machine:1", deviceRequest("demo-cp-1"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(created).To(BeTrue())
	g.Expect(d.State).To(Equal(metal.DeviceStateQueued))
	g.Expect(d.Tags).To(ConsistOf("cluster:demo", "machine:1"))
	g.Expect(d.Userdata).To(Equal("#cloud-config\n"))

	again, created, err := f.client.EnsureDevice(ctx, project, "machine:1", deviceRequest("demo-cp-1"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(created).To(BeFalse())
	g.Expect(again.ID).To(Equal(d.ID))

	f.clock.Add(3 * time.Second)
	d, err = f.client.GetDevice(ctx, d.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(d.State).To(Equal(metal.DeviceStateProvisioning))

	f.clock.Add(5 * time.Second)
	d, err = f.client.GetDevice(ctx, d.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(d.State).To(Equal(metal.DeviceStateActive))
	g.Expect(d.IPAddresses).To(HaveLen(2))
	g.Expect(d.Plan.Slug).To(Equal("c3.small.x86"))
	g.Expect(d.Metro.Code).To(Equal("da"))

	g.Expect(f.client.DeleteDevice(ctx, d.ID)).To(Succeed())
	g.Expect(f.client.DeleteDevice(ctx, d.ID)).To(Succeed(), "deleting an absent device is not an error")
	_, err = f.client.GetDevice(ctx, d.ID)
	g.Expect(metal.IsNotFound(err)).To(BeTrue())
	g.Expect(f.sim.Devices(project)).To(BeEmpty())
}

func TestListingDevicesByTagFollowsEveryPage(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t, metalsim.Options{}, metal.Retry{})
	ctx := context.Background()
	for i := range 120 {
		req := deviceRequest("node")
		if i%2 == 0 {
			req.Tags = []string{"even"}
		}
		_, _, err := f.client.EnsureDevice(ctx, project, "machine:"+time.Duration(i).String(), req)
		g.Expect(err).NotTo(HaveOccurred())
	}
	all, err := f.client.ListDevices(ctx, project, "")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(all).To(HaveLen(120))
	even, err := f.client.ListDevices(ctx, project, "even")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(even).To(HaveLen(60))
}

func TestRetries(t *testing.T) {
	tests := []struct {
		name      string
		fault     metalsim.Fault
		retry     metal.Retry
		wantErr   func(error) bool
		wantWaits []time.Duration
	}{
		{
			name:      "a 429 is retried after the Retry-After the server asks for",
			fault:     metalsim.Fault{Status: http.StatusTooManyRequests, RetryAfter: metalsim.Duration(3 * time.Second), Times: 2},
			wantWaits: []time.Duration{3 * time.Second, 3 * time.Second},
		},
		{
			name:      "a 500 is retried with a growing backoff",
			fault:     metalsim.Fault{Status: http.StatusInternalServerError, Times: 3},
			retry:     metal.Retry{BaseDelay: time.Second, MaxDelay: 10 * time.Second},
			wantWaits: []time.Duration{time.Second, 2 * time.Second, 4 * time.Second},
		},
		{
			name:      "a 503 that outlasts the attempts is returned",
			fault:     metalsim.Fault{Status: http.StatusServiceUnavailable},
			retry:     metal.Retry{MaxAttempts: 3, BaseDelay: time.Second},
			wantErr:   func(err error) bool { var e *metal.APIError; return asAPIError(err, &e) && e.StatusCode == 503 },
			wantWaits: []time.Duration{time.Second, 2 * time.Second},
		},
		{
			name:  "a Retry-After longer than the longest wait is handed back to the caller",
			fault: metalsim.Fault{Status: http.StatusTooManyRequests, RetryAfter: metalsim.Duration(5 * time.Minute)},
			wantErr: func(err error) bool {
				return metal.IsRateLimited(err) && metal.RetryAfter(err) == 5*time.Minute
			},
		},
		{
			name:    "a 404 is not retried",
			fault:   metalsim.Fault{Status: http.StatusNotFound},
			wantErr: metal.IsNotFound,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			f := newFixture(t, metalsim.Options{}, tt.retry)
			f.sim.InjectFault(tt.fault)
			_, err := f.client.GetProject(context.Background(), project)
			if tt.wantErr != nil {
				g.Expect(err).To(HaveOccurred())
				g.Expect(tt.wantErr(err)).To(BeTrue(), "unexpected error: %v", err)
			} else {
				g.Expect(err).NotTo(HaveOccurred())
			}
			waits := f.sleeps.all()
			g.Expect(waits).To(HaveLen(len(tt.wantWaits)))
			for i, want := range tt.wantWaits {
				// Up to 20% jitter is taken off a computed backoff; a Retry-After is exact.
				g.Expect(waits[i]).To(BeNumerically("<=", want))
				g.Expect(waits[i]).To(BeNumerically(">=", want*8/10))
			}
		})
	}
}

func asAPIError(err error, target **metal.APIError) bool {
	e, ok := err.(*metal.APIError) //nolint:errorlint // the client returns it unwrapped
	*target = e
	return ok
}

func TestASlowResponseIsRetriedAfterTheClientTimesOut(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t, metalsim.Options{}, metal.Retry{})
	f.sim.InjectFault(metalsim.Fault{Delay: metalsim.Duration(2 * time.Second), Times: 1})
	c, err := metal.New(metal.Options{
		BaseURL: f.url, APIKey: apiKey, HTTPClient: &http.Client{Timeout: 200 * time.Millisecond}, Sleep: f.sleeps.sleep,
	})
	g.Expect(err).NotTo(HaveOccurred())
	p, err := c.GetProject(context.Background(), project)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(p.ID).To(Equal(project))
	g.Expect(f.sleeps.all()).To(HaveLen(1))
}

func TestNoDuplicateDevice(t *testing.T) {
	tests := []struct {
		name  string
		retry metal.Retry
		// run creates the device the way the scenario goes, returning the last error.
		run func(ctx context.Context, f *fixture) error
	}{
		{
			name: "when the create's response is lost, the retry finds the device instead of creating another",
			run: func(ctx context.Context, f *fixture) error {
				f.sim.InjectFault(metalsim.Fault{Method: http.MethodPost, Path: "/devices", Status: http.StatusBadGateway, AfterHandling: true, Times: 1})
				_, created, err := f.client.EnsureDevice(ctx, project, "machine:uid-1", deviceRequest("demo-md-0"))
				if created {
					return errUnexpectedCreate
				}
				return err
			},
		},
		{
			name:  "when the caller crashes after the create, the next run finds the device",
			retry: metal.Retry{MaxAttempts: 1},
			run: func(ctx context.Context, f *fixture) error {
				f.sim.InjectFault(metalsim.Fault{Method: http.MethodPost, Path: "/devices", Status: http.StatusInternalServerError, AfterHandling: true, Times: 1})
				if _, _, err := f.client.EnsureDevice(ctx, project, "machine:uid-1", deviceRequest("demo-md-0")); err == nil {
					return errExpectedFailure
				}
				// A new process: a new client, the same identity tag.
				restarted, err := metal.New(metal.Options{BaseURL: f.url, APIKey: apiKey})
				if err != nil {
					return err
				}
				_, created, err := restarted.EnsureDevice(ctx, project, "machine:uid-1", deviceRequest("demo-md-0"))
				if created {
					return errUnexpectedCreate
				}
				return err
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			f := newFixture(t, metalsim.Options{}, tt.retry)
			g.Expect(tt.run(context.Background(), f)).To(Succeed())
			g.Expect(f.sim.Devices(project)).To(HaveLen(1))
		})
	}
}

type testError string

func (e testError) Error() string { return string(e) }

const (
	errUnexpectedCreate = testError("a second device was created")
	errExpectedFailure  = testError("the first run should have failed")
)

func TestBadInputIsRefusedWithTheAPIsMessage(t *testing.T) {
	tests := []struct {
		name    string
		key     string
		mutate  func(*metal.DeviceCreateRequest)
		is      func(error) bool
		message string
	}{
		{name: "a wrong API key", key: "wrong", mutate: func(*metal.DeviceCreateRequest) {}, is: metal.IsUnauthorized, message: "Invalid authentication token"},
		{name: "an unknown metro", key: apiKey, mutate: func(r *metal.DeviceCreateRequest) { r.Metro = "xx" }, is: metal.IsInvalid, message: "Metro xx is not a valid metro"},
		{name: "an unknown plan", key: apiKey, mutate: func(r *metal.DeviceCreateRequest) { r.Plan = "huge" }, is: metal.IsInvalid, message: `Plan "huge" is not a valid plan`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			f := newFixture(t, metalsim.Options{}, metal.Retry{})
			c, err := metal.New(metal.Options{BaseURL: f.url, APIKey: tt.key, Sleep: f.sleeps.sleep})
			g.Expect(err).NotTo(HaveOccurred())
			req := deviceRequest("demo")
			tt.mutate(&req)
			_, _, err = c.EnsureDevice(context.Background(), project, "machine:1", req)
			g.Expect(err).To(HaveOccurred())
			g.Expect(tt.is(err)).To(BeTrue(), "unexpected error: %v", err)
			g.Expect(err.Error()).To(ContainSubstring(tt.message))
			g.Expect(f.sleeps.all()).To(BeEmpty(), "bad input is not retried")
			g.Expect(f.sim.Devices(project)).To(BeEmpty())
		})
	}
}

func TestAnExhaustedDeviceQuotaIsRateLimited(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t, metalsim.Options{MaxDevicesPerProject: 1, QuotaRetryAfter: 10 * time.Minute}, metal.Retry{})
	ctx := context.Background()
	_, _, err := f.client.EnsureDevice(ctx, project, "machine:1", deviceRequest("one"))
	g.Expect(err).NotTo(HaveOccurred())
	_, _, err = f.client.EnsureDevice(ctx, project, "machine:2", deviceRequest("two"))
	g.Expect(metal.IsRateLimited(err)).To(BeTrue(), "unexpected error: %v", err)
	g.Expect(metal.RetryAfter(err)).To(Equal(10 * time.Minute))
	g.Expect(err.Error()).To(ContainSubstring("quota"))
}

func TestAnElasticIPIsReservedAssignedAndReleased(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t, metalsim.Options{}, metal.Retry{})
	ctx := context.Background()

	req := metal.IPReservationRequest{Type: metal.IPTypePublicIPv4, Quantity: 1, Metro: "da", Details: "demo control plane"}
	ip, err := f.client.EnsureIPReservation(ctx, project, "cluster:demo", req)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ip.CIDR).To(Equal(32))
	again, err := f.client.EnsureIPReservation(ctx, project, "cluster:demo", req)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again.ID).To(Equal(ip.ID))

	d, _, err := f.client.EnsureDevice(ctx, project, "machine:1", deviceRequest("demo-cp"))
	g.Expect(err).NotTo(HaveOccurred())
	a, err := f.client.AssignIP(ctx, d.ID, ip.Address+"/32")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(a.Address).To(Equal(ip.Address))
	ips, err := f.client.ListDeviceIPs(ctx, d.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ips).To(ContainElement(HaveField("Address", ip.Address)))

	err = f.client.DeleteIPReservation(ctx, ip.ID)
	g.Expect(metal.IsInvalid(err)).To(BeTrue(), "a reservation with assignments cannot be released: %v", err)

	g.Expect(f.client.UnassignIP(ctx, a.ID)).To(Succeed())
	g.Expect(f.client.DeleteIPReservation(ctx, ip.ID)).To(Succeed())
	g.Expect(f.client.DeleteIPReservation(ctx, ip.ID)).To(Succeed(), "releasing an absent reservation is not an error")
	g.Expect(f.sim.IPReservations(project)).To(BeEmpty())
}

func TestDeletingADeviceRemovesItsElasticIPAssignment(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t, metalsim.Options{}, metal.Retry{})
	ctx := context.Background()
	ip, err := f.client.EnsureIPReservation(ctx, project, "cluster:demo", metal.IPReservationRequest{Type: metal.IPTypePublicIPv4, Quantity: 1, Metro: "da"})
	g.Expect(err).NotTo(HaveOccurred())
	d, _, err := f.client.EnsureDevice(ctx, project, "machine:1", deviceRequest("demo-cp"))
	g.Expect(err).NotTo(HaveOccurred())
	_, err = f.client.AssignIP(ctx, d.ID, ip.Address+"/32")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(f.client.DeleteDevice(ctx, d.ID)).To(Succeed())
	g.Expect(f.client.DeleteIPReservation(ctx, ip.ID)).To(Succeed())
}

func TestAMarkedDeviceFailsToProvision(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t, metalsim.Options{ProvisioningFor: time.Second}, metal.Retry{})
	f.sim.InjectFault(metalsim.Fault{FailDevicesWithHostname: "bad"})
	ctx := context.Background()
	bad, _, err := f.client.EnsureDevice(ctx, project, "machine:1", deviceRequest("bad-one"))
	g.Expect(err).NotTo(HaveOccurred())
	good, _, err := f.client.EnsureDevice(ctx, project, "machine:2", deviceRequest("good-one"))
	g.Expect(err).NotTo(HaveOccurred())
	f.clock.Add(2 * time.Second)
	bad, err = f.client.GetDevice(ctx, bad.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(bad.State).To(Equal(metal.DeviceStateFailed))
	good, err = f.client.GetDevice(ctx, good.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(good.State).To(Equal(metal.DeviceStateActive))
}

func TestTheKeyGoesOnlyWhereItMayGo(t *testing.T) {
	for _, tt := range []struct {
		url, wantErr string
	}{
		{url: "https://api.equinix.com/metal/v1"},
		{url: "http://127.0.0.1:8089/metal/v1"},
		{url: "http://[::1]:8089/metal/v1"},
		{url: "http://localhost:8089/metal/v1"},
		{url: "http://metal.example.com/metal/v1", wantErr: "would send the API key in the clear"},
		{url: "http://0.0.0.0:8089/metal/v1", wantErr: "would send the API key in the clear"},
		{url: "https://user:pass@api.example.com/metal/v1", wantErr: "carries credentials"},
		{url: "ftp://api.example.com/metal/v1", wantErr: "is not an absolute http(s) URL"},
		{url: "/metal/v1", wantErr: "is not an absolute http(s) URL"},
	} {
		t.Run(tt.url, func(t *testing.T) {
			g := NewWithT(t)
			_, err := metal.New(metal.Options{BaseURL: tt.url, APIKey: apiKey})
			if tt.wantErr == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
			g.Expect(err.Error()).NotTo(ContainSubstring("pass"), "credentials in a URL are never echoed")
		})
	}

	t.Run("a redirect is not followed, so the key stays with the API it was meant for", func(t *testing.T) {
		g := NewWithT(t)
		var leaked []string
		var mu sync.Mutex
		elsewhere := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
			mu.Lock()
			defer mu.Unlock()
			leaked = append(leaked, r.Header.Get(metal.AuthHeader))
		}))
		t.Cleanup(elsewhere.Close)
		redirecting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, elsewhere.URL+r.URL.Path, http.StatusFound)
		}))
		t.Cleanup(redirecting.Close)
		c, err := metal.New(metal.Options{BaseURL: redirecting.URL + metalsim.BasePath, APIKey: apiKey, Sleep: (&sleeps{}).sleep})
		g.Expect(err).NotTo(HaveOccurred())
		_, err = c.ListIPReservations(context.Background(), project, "tag")
		g.Expect(err).To(MatchError(ContainSubstring("does not follow with the API key")))
		mu.Lock()
		defer mu.Unlock()
		g.Expect(leaked).To(BeEmpty())
	})
}
