package metalsim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Fault changes how the simulator answers the requests it matches. The first matching fault in
// the order they were injected applies; a request takes at most one.
type Fault struct {
	// Method matches the request method; any when empty.
	Method string `json:"method,omitempty"`
	// Path matches requests whose URL path contains it, such as "/devices"; any when empty.
	Path string `json:"path,omitempty"`
	// Status is the HTTP status to answer with (429, 500, 503...); 0 answers normally, which
	// with Delay makes a slow response.
	Status int `json:"status,omitempty"`
	// RetryAfter is sent as the Retry-After header (whole seconds, rounded up).
	RetryAfter Duration `json:"retryAfter,omitempty"`
	// Delay holds the response back this long.
	Delay Duration `json:"delay,omitempty"`
	// Times is how many requests the fault answers before it is spent; 0 means until cleared.
	Times int `json:"times,omitempty"`
	// AfterHandling applies the request first and then answers with Status: the change happens
	// but its response is lost, as when the caller crashes or the connection drops.
	AfterHandling bool `json:"afterHandling,omitempty"`
	// Message is the error message; the status text when empty.
	Message string `json:"message,omitempty"`
	// FailDevicesWithHostname, when not empty, is not a request fault: every device created
	// from now on whose hostname contains it ends its provisioning failed.
	FailDevicesWithHostname string `json:"failDevicesWithHostname,omitempty"`
}

// Duration is a time.Duration that reads and writes JSON as a Go duration string ("2s").
type Duration time.Duration

// MarshalJSON implements json.Marshaler.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON implements json.Unmarshaler.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("a duration is a string such as \"2s\": %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

type activeFault struct {
	Fault
	left int // requests left; -1 for unlimited
}

// InjectFault adds f.
func (s *Server) InjectFault(f Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f.FailDevicesWithHostname != "" {
		s.failing = append(s.failing, f.FailDevicesWithHostname)
	}
	if f.Status == 0 && f.Delay == 0 {
		return
	}
	left := f.Times
	if left == 0 {
		left = -1
	}
	s.faults = append(s.faults, &activeFault{Fault: f, left: left})
}

// ClearFaults removes every fault, including failing hostnames.
func (s *Server) ClearFaults() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = nil
	s.failing = nil
}

// takeFault returns the fault that answers r, spending one of its uses, or nil.
func (s *Server) takeFault(r *http.Request) *Fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, f := range s.faults {
		if f.Method != "" && !strings.EqualFold(f.Method, r.Method) {
			continue
		}
		if f.Path != "" && !strings.Contains(r.URL.Path, f.Path) {
			continue
		}
		if f.left > 0 {
			f.left--
			if f.left == 0 {
				s.faults = append(s.faults[:i:i], s.faults[i+1:]...)
			}
		}
		s.stats.Faults++
		out := f.Fault
		return &out
	}
	return nil
}

// failsToProvision reports whether a device with hostname is marked to fail. Must hold mu.
func (s *Server) failsToProvision(hostname string) bool {
	for _, h := range s.failing {
		if strings.Contains(hostname, h) {
			return true
		}
	}
	return false
}
