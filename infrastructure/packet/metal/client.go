package metal

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/flotilla-dev/flotilla/pkg/netaddr"
)

// DefaultBaseURL is the public Equinix Metal API.
const DefaultBaseURL = "https://api.equinix.com/metal/v1"

// AuthHeader carries the API key on every request.
const AuthHeader = "X-Auth-Token"

// Interface is the part of the Metal API the Packet provider uses. Deletes and gets of objects
// that do not exist return an error for which IsNotFound is true; deletes of absent objects are
// not errors.
type Interface interface {
	// GetProject returns the project with id.
	GetProject(ctx context.Context, id string) (*Project, error)

	// GetDevice returns the device with id.
	GetDevice(ctx context.Context, id string) (*Device, error)
	// ListDevices returns the project's devices, only those carrying tag when tag is not empty.
	ListDevices(ctx context.Context, projectID, tag string) ([]Device, error)
	// EnsureDevice returns the project's device carrying identityTag, creating it from req
	// (identityTag added to its tags) when there is none. created says whether it did.
	EnsureDevice(ctx context.Context, projectID, identityTag string, req DeviceCreateRequest) (device *Device, created bool, err error)
	// DeleteDevice deletes the device with id; nil when it does not exist.
	DeleteDevice(ctx context.Context, id string) error

	// ListIPReservations returns the project's IP reservations, only those carrying tag when tag
	// is not empty.
	ListIPReservations(ctx context.Context, projectID, tag string) ([]IPReservation, error)
	// EnsureIPReservation returns the project's IP reservation carrying identityTag, requesting
	// it with req (identityTag added to its tags) when there is none.
	EnsureIPReservation(ctx context.Context, projectID, identityTag string, req IPReservationRequest) (*IPReservation, error)
	// GetIPReservation returns the IP reservation with id.
	GetIPReservation(ctx context.Context, id string) (*IPReservation, error)
	// DeleteIPReservation releases the reservation with id; nil when it does not exist.
	DeleteIPReservation(ctx context.Context, id string) error

	// ListDeviceIPs returns the addresses assigned to a device.
	ListDeviceIPs(ctx context.Context, deviceID string) ([]IPAddress, error)
	// AssignIP assigns address (CIDR notation, such as 147.75.1.2/32) to a device.
	AssignIP(ctx context.Context, deviceID, address string) (*IPAddress, error)
	// UnassignIP removes the IP assignment with id; nil when it does not exist.
	UnassignIP(ctx context.Context, assignmentID string) error
}

// APIError is a response the API answered with a status of 400 or more.
type APIError struct {
	// Method and Path are the request's.
	Method, Path string
	// StatusCode is the HTTP status.
	StatusCode int
	// Messages are the API's error messages.
	Messages []string
	// RetryAfter is the wait the server asked for with a Retry-After header, 0 without one.
	RetryAfter time.Duration
}

func (e *APIError) Error() string {
	msg := strings.Join(e.Messages, "; ")
	if msg == "" {
		msg = http.StatusText(e.StatusCode)
	}
	return fmt.Sprintf("metal API %s %s: %d: %s", e.Method, e.Path, e.StatusCode, msg)
}

// IsNotFound reports whether err is a 404 from the API.
func IsNotFound(err error) bool { return statusIs(err, http.StatusNotFound) }

// IsUnauthorized reports whether err says the API key was refused (401 or 403).
func IsUnauthorized(err error) bool {
	return statusIs(err, http.StatusUnauthorized) || statusIs(err, http.StatusForbidden)
}

// IsRateLimited reports whether err is a 429 the client gave up retrying.
func IsRateLimited(err error) bool { return statusIs(err, http.StatusTooManyRequests) }

// IsInvalid reports whether err says the request itself was wrong (400 or 422): an unknown
// metro, plan or operating system, for example. Retrying the same request does not help.
func IsInvalid(err error) bool {
	return statusIs(err, http.StatusBadRequest) || statusIs(err, http.StatusUnprocessableEntity)
}

// RetryAfter returns how long the server asked to wait before the next attempt, 0 when err
// carries no such request.
func RetryAfter(err error) time.Duration {
	var apiErr *APIError
	if errors.As(err, &apiErr) {
		return apiErr.RetryAfter
	}
	return 0
}

func statusIs(err error, code int) bool {
	var apiErr *APIError
	return errors.As(err, &apiErr) && apiErr.StatusCode == code
}

// Retry is the client's retry policy for 429, 5xx and transport errors.
type Retry struct {
	// MaxAttempts is how many times a request is sent at most; 5 when 0.
	MaxAttempts int
	// BaseDelay is the wait after the first failure, doubled after each further one (with
	// jitter); 500ms when 0.
	BaseDelay time.Duration
	// MaxDelay caps a wait. A Retry-After longer than MaxDelay ends the retries: the error is
	// returned with APIError.RetryAfter, so a caller (a reconciler) can come back later instead
	// of blocking. 30s when 0.
	MaxDelay time.Duration
}

func (r Retry) withDefaults() Retry {
	if r.MaxAttempts <= 0 {
		r.MaxAttempts = 5
	}
	if r.BaseDelay <= 0 {
		r.BaseDelay = 500 * time.Millisecond
	}
	if r.MaxDelay <= 0 {
		r.MaxDelay = 30 * time.Second
	}
	return r
}

// backoff returns the wait before attempt n+1 after n failed attempts (n >= 1): BaseDelay·2^(n-1)
// capped at MaxDelay, with up to 20% jitter taken off so that many clients spread out.
func (r Retry) backoff(n int) time.Duration {
	d := r.BaseDelay
	for i := 1; i < n && d < r.MaxDelay; i++ {
		d *= 2
	}
	d = min(d, r.MaxDelay)
	return d - time.Duration(rand.Int64N(int64(d)/5+1)) //nolint:gosec // jitter needs no crypto
}

// Options configure a Client.
type Options struct {
	// BaseURL is the API root including /metal/v1; DefaultBaseURL when empty.
	BaseURL string
	// APIKey authenticates every request.
	APIKey string
	// HTTPClient sends the requests; a client with a 60s timeout when nil.
	HTTPClient *http.Client
	// Retry is the retry policy.
	Retry Retry
	// UserAgent is sent with every request; "flotilla" when empty.
	UserAgent string
	// Sleep waits between attempts; a context-aware time.Sleep when nil. Tests replace it.
	Sleep func(ctx context.Context, d time.Duration) error
}

// Client is the Metal API client. It is safe for concurrent use.
type Client struct {
	base   *url.URL
	opts   Options
	retry  Retry
	client *http.Client
}

var _ Interface = (*Client)(nil)

// New returns a client for opts.BaseURL authenticating with opts.APIKey. The base URL must
// keep the key off the network in the clear (CheckBaseURL), and the client never follows a
// redirect: the key would go along to wherever it points.
func New(opts Options) (*Client, error) {
	if opts.APIKey == "" {
		return nil, errors.New("metal client: an API key is required")
	}
	raw := opts.BaseURL
	if raw == "" {
		raw = DefaultBaseURL
	}
	if err := CheckBaseURL(raw); err != nil {
		return nil, fmt.Errorf("metal client: %w", err)
	}
	base, err := url.Parse(strings.TrimSuffix(raw, "/"))
	if err != nil {
		return nil, fmt.Errorf("metal client: base URL %q: %w", raw, err)
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{Timeout: 60 * time.Second}
	}
	noRedirects := *opts.HTTPClient
	noRedirects.CheckRedirect = func(req *http.Request, _ []*http.Request) error {
		return fmt.Errorf("the Metal API answered with a redirect to %s, which the client does not follow with the API key", req.URL.Redacted())
	}
	opts.HTTPClient = &noRedirects
	if opts.UserAgent == "" {
		opts.UserAgent = "flotilla"
	}
	if opts.Sleep == nil {
		opts.Sleep = sleep
	}
	return &Client{base: base, opts: opts, retry: opts.Retry.withDefaults(), client: opts.HTTPClient}, nil
}

// CheckBaseURL returns nil when raw is a base URL the API key may be sent to: an absolute https
// URL, or an http URL of a loopback host (a simulator on this machine, such as
// `flotilla dev metal-api`). Its error says what is wrong and what to use instead.
func CheckBaseURL(raw string) error {
	u, err := url.Parse(raw)
	switch {
	case err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http"):
		return fmt.Errorf("%q is not an absolute http(s) URL of the Metal API, such as %s", raw, DefaultBaseURL)
	case u.User != nil:
		return fmt.Errorf("%q carries credentials; the API key goes in a Secret, not in the URL", u.Redacted())
	case u.Scheme == "http" && !netaddr.IsLoopback(u.Host):
		return fmt.Errorf("%q would send the API key in the clear to another machine: use https, or http only to a loopback address (127.0.0.1, ::1, localhost)", raw)
	}
	return nil
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// GetProject implements Interface.
func (c *Client) GetProject(ctx context.Context, id string) (*Project, error) {
	p := &Project{}
	if err := c.do(ctx, http.MethodGet, "/projects/"+url.PathEscape(id), nil, nil, p); err != nil {
		return nil, err
	}
	return p, nil
}

// GetDevice implements Interface.
func (c *Client) GetDevice(ctx context.Context, id string) (*Device, error) {
	d := &Device{}
	if err := c.do(ctx, http.MethodGet, "/devices/"+url.PathEscape(id), nil, nil, d); err != nil {
		return nil, err
	}
	return d, nil
}

// ListDevices implements Interface. It follows the pages of the list; the tag filter is also
// applied to the answer, so a server that ignores the tag parameter gives the same result.
func (c *Client) ListDevices(ctx context.Context, projectID, tag string) ([]Device, error) {
	var out []Device
	for page := 1; ; page++ {
		q := url.Values{"page": {strconv.Itoa(page)}, "per_page": {"100"}}
		if tag != "" {
			q.Set("tag", tag)
		}
		list := &DeviceList{}
		if err := c.do(ctx, http.MethodGet, "/projects/"+url.PathEscape(projectID)+"/devices", q, nil, list); err != nil {
			return nil, err
		}
		for i := range list.Devices {
			if tag == "" || list.Devices[i].HasTag(tag) {
				out = append(out, list.Devices[i])
			}
		}
		if list.Meta.LastPage <= page || len(list.Devices) == 0 {
			return out, nil
		}
	}
}

// EnsureDevice implements Interface. The identity tag is what makes it safe to call again after
// a crash or a lost response: the device that an earlier call created is found, not duplicated.
// A create that fails with a 5xx or a transport error may still have created the device, so the
// request is never resent blindly; the next attempt looks for the tag first.
func (c *Client) EnsureDevice(ctx context.Context, projectID, identityTag string, req DeviceCreateRequest) (*Device, bool, error) {
	if identityTag == "" {
		return nil, false, errors.New("EnsureDevice: an identity tag is required")
	}
	if !contains(req.Tags, identityTag) {
		req.Tags = append(append([]string(nil), req.Tags...), identityTag)
	}
	var lastErr error
	for attempt := 1; attempt <= c.retry.MaxAttempts; attempt++ {
		found, err := c.ListDevices(ctx, projectID, identityTag)
		if err != nil {
			return nil, false, err
		}
		if d := oldestDevice(found); d != nil {
			return d, false, nil
		}
		d := &Device{}
		err = c.doOnce(ctx, http.MethodPost, "/projects/"+url.PathEscape(projectID)+"/devices", nil, req, d)
		if err == nil {
			return d, true, nil
		}
		lastErr = err
		wait, retry := c.shouldRetry(ctx, err, attempt)
		if !retry {
			return nil, false, err
		}
		if err := c.opts.Sleep(ctx, wait); err != nil {
			return nil, false, err
		}
	}
	return nil, false, lastErr
}

// oldestDevice returns the device created first, so that if duplicates ever exist every caller
// settles on the same one.
func oldestDevice(devices []Device) *Device {
	var best *Device
	for i := range devices {
		if best == nil || devices[i].CreatedAt.Before(best.CreatedAt) ||
			(devices[i].CreatedAt.Equal(best.CreatedAt) && devices[i].ID < best.ID) {
			best = &devices[i]
		}
	}
	return best
}

// DeleteDevice implements Interface.
func (c *Client) DeleteDevice(ctx context.Context, id string) error {
	return ignoreNotFound(c.do(ctx, http.MethodDelete, "/devices/"+url.PathEscape(id), nil, nil, nil))
}

// ListIPReservations implements Interface. The API has no tag filter for reservations; the
// client filters.
func (c *Client) ListIPReservations(ctx context.Context, projectID, tag string) ([]IPReservation, error) {
	var out []IPReservation
	for page := 1; ; page++ {
		q := url.Values{"page": {strconv.Itoa(page)}, "per_page": {"100"}}
		list := &IPReservationList{}
		if err := c.do(ctx, http.MethodGet, "/projects/"+url.PathEscape(projectID)+"/ips", q, nil, list); err != nil {
			return nil, err
		}
		for i := range list.IPAddresses {
			if tag == "" || list.IPAddresses[i].HasTag(tag) {
				out = append(out, list.IPAddresses[i])
			}
		}
		if list.Meta.LastPage <= page || len(list.IPAddresses) == 0 {
			return out, nil
		}
	}
}

// EnsureIPReservation implements Interface, with the same find-before-create rule as
// EnsureDevice.
func (c *Client) EnsureIPReservation(ctx context.Context, projectID, identityTag string, req IPReservationRequest) (*IPReservation, error) {
	if identityTag == "" {
		return nil, errors.New("EnsureIPReservation: an identity tag is required")
	}
	if !contains(req.Tags, identityTag) {
		req.Tags = append(append([]string(nil), req.Tags...), identityTag)
	}
	var lastErr error
	for attempt := 1; attempt <= c.retry.MaxAttempts; attempt++ {
		found, err := c.ListIPReservations(ctx, projectID, identityTag)
		if err != nil {
			return nil, err
		}
		if len(found) > 0 {
			return &found[0], nil
		}
		r := &IPReservation{}
		err = c.doOnce(ctx, http.MethodPost, "/projects/"+url.PathEscape(projectID)+"/ips", nil, req, r)
		if err == nil {
			return r, nil
		}
		lastErr = err
		wait, retry := c.shouldRetry(ctx, err, attempt)
		if !retry {
			return nil, err
		}
		if err := c.opts.Sleep(ctx, wait); err != nil {
			return nil, err
		}
	}
	return nil, lastErr
}

// GetIPReservation implements Interface.
func (c *Client) GetIPReservation(ctx context.Context, id string) (*IPReservation, error) {
	r := &IPReservation{}
	if err := c.do(ctx, http.MethodGet, "/ips/"+url.PathEscape(id), nil, nil, r); err != nil {
		return nil, err
	}
	return r, nil
}

// DeleteIPReservation implements Interface.
func (c *Client) DeleteIPReservation(ctx context.Context, id string) error {
	return ignoreNotFound(c.do(ctx, http.MethodDelete, "/ips/"+url.PathEscape(id), nil, nil, nil))
}

// ListDeviceIPs implements Interface.
func (c *Client) ListDeviceIPs(ctx context.Context, deviceID string) ([]IPAddress, error) {
	list := &IPAssignmentList{}
	if err := c.do(ctx, http.MethodGet, "/devices/"+url.PathEscape(deviceID)+"/ips", nil, nil, list); err != nil {
		return nil, err
	}
	return list.IPAddresses, nil
}

// AssignIP implements Interface.
func (c *Client) AssignIP(ctx context.Context, deviceID, address string) (*IPAddress, error) {
	a := &IPAddress{}
	if err := c.do(ctx, http.MethodPost, "/devices/"+url.PathEscape(deviceID)+"/ips", nil, IPAssignmentRequest{Address: address}, a); err != nil {
		return nil, err
	}
	return a, nil
}

// AssignmentID returns the ID of an IP assignment from its href (/metal/v1/ips/<id>).
func AssignmentID(h Href) string {
	return h.Href[strings.LastIndex(h.Href, "/")+1:]
}

// UnassignIP implements Interface.
func (c *Client) UnassignIP(ctx context.Context, assignmentID string) error {
	return ignoreNotFound(c.do(ctx, http.MethodDelete, "/ips/"+url.PathEscape(assignmentID), nil, nil, nil))
}

// do sends a request, retrying 429, 5xx and transport errors as the policy allows.
func (c *Client) do(ctx context.Context, method, path string, query url.Values, body, out any) error {
	for attempt := 1; ; attempt++ {
		err := c.doOnce(ctx, method, path, query, body, out)
		if err == nil {
			return nil
		}
		wait, retry := c.shouldRetry(ctx, err, attempt)
		if !retry {
			return err
		}
		if err := c.opts.Sleep(ctx, wait); err != nil {
			return err
		}
	}
}

// shouldRetry decides whether attempt, which failed with err, is followed by another one, and
// after how long.
func (c *Client) shouldRetry(ctx context.Context, err error, attempt int) (time.Duration, bool) {
	if attempt >= c.retry.MaxAttempts || ctx.Err() != nil {
		return 0, false
	}
	var apiErr *APIError
	if !errors.As(err, &apiErr) {
		var transport *transportError
		return c.retry.backoff(attempt), errors.As(err, &transport)
	}
	if apiErr.StatusCode != http.StatusTooManyRequests && apiErr.StatusCode < 500 {
		return 0, false
	}
	if apiErr.RetryAfter > 0 {
		if apiErr.RetryAfter > c.retry.MaxDelay {
			return 0, false
		}
		return apiErr.RetryAfter, true
	}
	return c.retry.backoff(attempt), true
}

// transportError is a request that got no HTTP response.
type transportError struct{ err error }

func (e *transportError) Error() string { return e.err.Error() }
func (e *transportError) Unwrap() error { return e.err }

// doOnce sends one request and decodes a 2xx answer into out (when not nil).
func (c *Client) doOnce(ctx context.Context, method, path string, query url.Values, body, out any) error {
	u := *c.base
	u.Path += path
	u.RawQuery = query.Encode()

	var reader io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("encoding %s %s: %w", method, path, err)
		}
		reader = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), reader)
	if err != nil {
		return fmt.Errorf("building %s %s: %w", method, path, err)
	}
	req.Header.Set(AuthHeader, c.opts.APIKey)
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.opts.UserAgent)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return &transportError{err: fmt.Errorf("metal API %s %s: %w", method, path, err)}
	}
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
	if err != nil {
		return &transportError{err: fmt.Errorf("metal API %s %s: reading the response: %w", method, path, err)}
	}
	if resp.StatusCode >= 400 {
		return newAPIError(method, path, resp, data)
	}
	if out == nil || len(data) == 0 || resp.StatusCode == http.StatusNoContent {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("metal API %s %s: decoding the response: %w", method, path, err)
	}
	return nil
}

func newAPIError(method, path string, resp *http.Response, data []byte) *APIError {
	e := &APIError{Method: method, Path: path, StatusCode: resp.StatusCode, RetryAfter: parseRetryAfter(resp.Header.Get("Retry-After"), time.Now())}
	var body ErrorResponse
	if json.Unmarshal(data, &body) == nil {
		e.Messages = append(e.Messages, body.Errors...)
		if body.Error != "" {
			e.Messages = append(e.Messages, body.Error)
		}
	}
	return e
}

// parseRetryAfter reads a Retry-After header: delay-seconds or an HTTP date.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil && secs >= 0 {
		return time.Duration(secs * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0)
	}
	return 0
}

func ignoreNotFound(err error) error {
	if IsNotFound(err) {
		return nil
	}
	return err
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
