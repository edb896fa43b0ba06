package metalsim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/flotilla-dev/flotilla/infrastructure/packet/metal"
)

// Projects.

func (s *Server) listProjects(_ http.ResponseWriter, r *http.Request) response {
	var all []metal.Project
	for _, p := range s.projects {
		all = append(all, *p)
	}
	slices.SortFunc(all, func(a, b metal.Project) int { return strings.Compare(a.ID, b.ID) })
	page, meta := paginate(r, all)
	return ok(metal.ProjectList{Projects: nonNil(page), Meta: meta})
}

func (s *Server) createProject(_ http.ResponseWriter, r *http.Request) response {
	var req struct {
		Name string `json:"name"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Name == "" {
		return fail(http.StatusUnprocessableEntity, "Name can't be blank")
	}
	p := s.ensureProject(newID())
	p.Name = req.Name
	return created(p)
}

func (s *Server) getProject(_ http.ResponseWriter, r *http.Request) response {
	return ok(s.ensureProject(r.PathValue("id")))
}

// Devices.

func (s *Server) listDevices(_ http.ResponseWriter, r *http.Request) response {
	projectID := r.PathValue("id")
	s.ensureProject(projectID)
	tag := r.URL.Query().Get("tag")
	var all []metal.Device
	for _, d := range s.sortedDevices() {
		if d.projectID == projectID && (tag == "" || d.HasTag(tag)) {
			all = append(all, s.render(d))
		}
	}
	page, meta := paginate(r, all)
	return ok(metal.DeviceList{Devices: nonNil(page), Meta: meta})
}

func (s *Server) createDevice(_ http.ResponseWriter, r *http.Request) response {
	projectID := r.PathValue("id")
	project := s.ensureProject(projectID)
	var req metal.DeviceCreateRequest
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return fail(http.StatusBadRequest, "Invalid request body: %v", err)
	}
	if problems := s.validateDevice(req); len(problems) > 0 {
		return response{status: http.StatusUnprocessableEntity, body: metal.ErrorResponse{Errors: problems}}
	}
	if s.opts.MaxDevicesPerProject > 0 && s.countDevices(projectID) >= s.opts.MaxDevicesPerProject {
		resp := fail(http.StatusTooManyRequests, "Project %s has reached its quota of %d devices", projectID, s.opts.MaxDevicesPerProject)
		resp.retryAfter = s.opts.QuotaRetryAfter
		return resp
	}
	now := s.opts.Now().UTC()
	id := newID()
	d := &device{projectID: projectID, fails: s.failsToProvision(req.Hostname)}
	d.Device = metal.Device{
		ID:                    id,
		Hostname:              req.Hostname,
		Tags:                  append([]string{}, req.Tags...),
		Userdata:              req.Userdata,
		BillingCycle:          req.BillingCycle,
		Plan:                  &metal.Slug{Slug: req.Plan, Name: req.Plan},
		OperatingSystem:       &metal.Slug{Slug: req.OperatingSystem, Name: req.OperatingSystem},
		HardwareReservationID: req.HardwareReservationID,
		Project:               &metal.Href{Href: project.Href},
		CreatedAt:             now,
		UpdatedAt:             now,
		Href:                  BasePath + "/devices/" + id,
	}
	if d.BillingCycle == "" {
		d.BillingCycle = "hourly"
	}
	metro := req.Metro
	if metro == "" && len(req.Facility) > 0 {
		metro = req.Facility[0][:2]
		d.Facility = &metal.Location{Code: req.Facility[0], Name: req.Facility[0]}
	}
	d.Metro = &metal.Location{Code: metro, Name: metro}
	s.nextPublic++
	s.nextPrivate++
	d.IPAddresses = []metal.IPAddress{
		{
			ID: newID(), Address: fmt.Sprintf("147.75.%d.%d", s.nextPublic/128, (s.nextPublic%128)*2+1), AddressFamily: 4,
			Netmask: "255.255.255.254", CIDR: 31, Public: true, Management: true,
			Gateway: fmt.Sprintf("147.75.%d.%d", s.nextPublic/128, (s.nextPublic%128)*2),
		},
		{
			ID: newID(), Address: fmt.Sprintf("10.%d.%d.%d", 64+s.nextPrivate/32768, (s.nextPrivate/128)%256, (s.nextPrivate%128)*2+1), AddressFamily: 4,
			Netmask: "255.255.255.254", CIDR: 31, Public: false, Management: true,
		},
	}
	for i := range d.IPAddresses {
		d.IPAddresses[i].AssignedTo = &metal.Href{Href: d.Href}
		d.IPAddresses[i].Href = BasePath + "/ips/" + d.IPAddresses[i].ID
	}
	s.devices[id] = d
	if s.opts.Devices != nil && !d.fails {
		d.boot = time.AfterFunc(s.opts.QueuedFor+s.opts.ProvisioningFor, func() {
			if current, found := s.Device(id); found {
				s.opts.Devices.Boot(current, func() (metal.Device, bool) { return s.Device(id) })
			}
		})
	}
	return created(s.render(d))
}

// validateDevice returns the API's complaints about a create request.
func (s *Server) validateDevice(req metal.DeviceCreateRequest) []string {
	var problems []string
	if req.Hostname == "" {
		problems = append(problems, "Hostname can't be blank")
	}
	switch {
	case req.Metro == "" && len(req.Facility) == 0:
		problems = append(problems, "Either metro or facility must be set")
	case req.Metro != "" && !slices.Contains(defaultMetros, req.Metro):
		problems = append(problems, fmt.Sprintf("Metro %s is not a valid metro", req.Metro))
	case req.Metro == "" && (len(req.Facility[0]) < 3 || !slices.Contains(defaultMetros, req.Facility[0][:2])):
		problems = append(problems, fmt.Sprintf("Facility %s is not a valid facility", req.Facility[0]))
	}
	if !slices.Contains(defaultPlans, req.Plan) {
		problems = append(problems, fmt.Sprintf("Plan %q is not a valid plan", req.Plan))
	}
	if !slices.Contains(defaultOperatingSystems, req.OperatingSystem) {
		problems = append(problems, fmt.Sprintf("Operating system %q is not a valid operating system", req.OperatingSystem))
	}
	if req.BillingCycle != "" && !slices.Contains(billingCycles, req.BillingCycle) {
		problems = append(problems, fmt.Sprintf("Billing cycle %q is not valid", req.BillingCycle))
	}
	if len(req.Userdata) > 64<<10 {
		problems = append(problems, "Userdata is too long (maximum is 65536 characters)")
	}
	return problems
}

func (s *Server) countDevices(projectID string) int {
	n := 0
	for _, d := range s.devices {
		if d.projectID == projectID {
			n++
		}
	}
	return n
}

// render returns the device as the API shows it now: its state follows from its age, and the
// elastic IPs assigned to it are listed after its own addresses. Must hold mu.
func (s *Server) render(d *device) metal.Device {
	out := d.Device
	age := s.opts.Now().Sub(d.CreatedAt)
	switch {
	case age < s.opts.QueuedFor:
		out.State = metal.DeviceStateQueued
	case age < s.opts.QueuedFor+s.opts.ProvisioningFor:
		out.State = metal.DeviceStateProvisioning
	case d.fails:
		out.State = metal.DeviceStateFailed
	default:
		out.State = metal.DeviceStateActive
	}
	out.Tags = append([]string{}, d.Tags...)
	out.IPAddresses = append([]metal.IPAddress{}, d.IPAddresses...)
	for _, a := range s.sortedAssignments() {
		if a.deviceID == d.ID {
			out.IPAddresses = append(out.IPAddresses, a.IPAddress)
		}
	}
	return out
}

func (s *Server) getDevice(_ http.ResponseWriter, r *http.Request) response {
	d, found := s.devices[r.PathValue("id")]
	if !found {
		return fail(http.StatusNotFound, "Not found")
	}
	return ok(s.render(d))
}

func (s *Server) deleteDevice(_ http.ResponseWriter, r *http.Request) response {
	id := r.PathValue("id")
	d, found := s.devices[id]
	if !found {
		return fail(http.StatusNotFound, "Not found")
	}
	delete(s.devices, id)
	if d.boot != nil {
		d.boot.Stop()
		s.opts.Devices.Shutdown(id)
	}
	for aid, a := range s.assignments {
		if a.deviceID == id {
			s.unassign(aid)
		}
	}
	return noContent()
}

// IP reservations and assignments.

func (s *Server) listReservations(_ http.ResponseWriter, r *http.Request) response {
	projectID := r.PathValue("id")
	s.ensureProject(projectID)
	var all []metal.IPReservation
	for _, res := range s.sortedReservations() {
		if res.projectID == projectID {
			all = append(all, res.IPReservation)
		}
	}
	page, meta := paginate(r, all)
	return ok(metal.IPReservationList{IPAddresses: nonNil(page), Meta: meta})
}

func (s *Server) createReservation(_ http.ResponseWriter, r *http.Request) response {
	projectID := r.PathValue("id")
	project := s.ensureProject(projectID)
	var req metal.IPReservationRequest
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return fail(http.StatusBadRequest, "Invalid request body: %v", err)
	}
	var problems []string
	if req.Type != metal.IPTypePublicIPv4 && req.Type != metal.IPTypeGlobalIPv4 {
		problems = append(problems, fmt.Sprintf("Type %q is not supported (public_ipv4 or global_ipv4)", req.Type))
	}
	if req.Quantity != 1 && req.Quantity != 2 && req.Quantity != 4 && req.Quantity != 8 {
		problems = append(problems, "Quantity must be 1, 2, 4 or 8")
	}
	if req.Type == metal.IPTypePublicIPv4 && req.Metro == "" && req.Facility == "" {
		problems = append(problems, "Either metro or facility must be set for public_ipv4")
	}
	if req.Metro != "" && !slices.Contains(defaultMetros, req.Metro) {
		problems = append(problems, fmt.Sprintf("Metro %s is not a valid metro", req.Metro))
	}
	if len(problems) > 0 {
		return response{status: http.StatusUnprocessableEntity, body: metal.ErrorResponse{Errors: problems}}
	}
	cidr := map[int]int{1: 32, 2: 31, 4: 30, 8: 29}[req.Quantity]
	base := s.nextElastic
	s.nextElastic += 8
	id := newID()
	res := &reservation{projectID: projectID}
	res.IPReservation = metal.IPReservation{
		ID:            id,
		Type:          req.Type,
		Address:       elasticAddress(base),
		Network:       elasticAddress(base),
		Netmask:       map[int]string{32: "255.255.255.255", 31: "255.255.255.254", 30: "255.255.255.252", 29: "255.255.255.248"}[cidr],
		CIDR:          cidr,
		AddressFamily: 4,
		Public:        true,
		Tags:          append([]string{}, req.Tags...),
		Details:       req.Details,
		Project:       &metal.Href{Href: project.Href},
		Assignments:   []metal.Href{},
		CreatedAt:     s.opts.Now().UTC(),
		Href:          BasePath + "/ips/" + id,
	}
	if req.Metro != "" {
		res.Metro = &metal.Location{Code: req.Metro, Name: req.Metro}
	}
	s.reservations[id] = res
	return created(res.IPReservation)
}

func (s *Server) getIP(_ http.ResponseWriter, r *http.Request) response {
	id := r.PathValue("id")
	if res, found := s.reservations[id]; found {
		return ok(res.IPReservation)
	}
	if a, found := s.assignments[id]; found {
		return ok(a.IPAddress)
	}
	return fail(http.StatusNotFound, "Not found")
}

// deleteIP releases a reservation (refused while it has assignments) or removes an assignment.
func (s *Server) deleteIP(_ http.ResponseWriter, r *http.Request) response {
	id := r.PathValue("id")
	if res, found := s.reservations[id]; found {
		if len(res.Assignments) > 0 {
			return fail(http.StatusUnprocessableEntity, "Cannot remove an IP reservation with active assignments")
		}
		delete(s.reservations, id)
		return noContent()
	}
	if _, found := s.assignments[id]; found {
		s.unassign(id)
		return noContent()
	}
	return fail(http.StatusNotFound, "Not found")
}

func (s *Server) unassign(assignmentID string) {
	a := s.assignments[assignmentID]
	delete(s.assignments, assignmentID)
	if res, found := s.reservations[a.reservationID]; found {
		res.Assignments = slices.DeleteFunc(res.Assignments, func(h metal.Href) bool { return h.Href == a.Href })
	}
}

func (s *Server) listDeviceIPs(_ http.ResponseWriter, r *http.Request) response {
	d, found := s.devices[r.PathValue("id")]
	if !found {
		return fail(http.StatusNotFound, "Not found")
	}
	return ok(metal.IPAssignmentList{IPAddresses: s.render(d).IPAddresses})
}

func (s *Server) assignIP(_ http.ResponseWriter, r *http.Request) response {
	d, found := s.devices[r.PathValue("id")]
	if !found {
		return fail(http.StatusNotFound, "Not found")
	}
	var req metal.IPAssignmentRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		return fail(http.StatusBadRequest, "Invalid request body: %v", err)
	}
	address, _, _ := strings.Cut(req.Address, "/")
	var res *reservation
	for _, candidate := range s.reservations {
		if candidate.projectID == d.projectID && candidate.Address == address {
			res = candidate
		}
	}
	if res == nil {
		return fail(http.StatusUnprocessableEntity, "Address %s is not reserved in the device's project", req.Address)
	}
	for _, a := range s.assignments {
		if a.reservationID == res.ID && a.deviceID == d.ID {
			return fail(http.StatusUnprocessableEntity, "Address %s is already assigned to this device", req.Address)
		}
	}
	id := newID()
	a := &assignment{deviceID: d.ID, reservationID: res.ID}
	a.IPAddress = metal.IPAddress{
		ID: id, Address: res.Address, AddressFamily: 4, Netmask: res.Netmask, CIDR: res.CIDR, Network: res.Network,
		Public: true, AssignedTo: &metal.Href{Href: d.Href}, Href: BasePath + "/ips/" + id,
	}
	s.assignments[id] = a
	res.Assignments = append(res.Assignments, metal.Href{Href: a.Href})
	return created(a.IPAddress)
}

func (s *Server) sortedAssignments() []*assignment {
	out := make([]*assignment, 0, len(s.assignments))
	for _, a := range s.assignments {
		out = append(out, a)
	}
	slices.SortFunc(out, func(a, b *assignment) int { return strings.Compare(a.ID, b.ID) })
	return out
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// elasticAddress is the address of the elastic IP numbered n: 127.40.0.0 to 127.254.255.255,
// counted from the random start New chose (nextElastic). Elastic IPs are loopback addresses so
// that what a simulated device serves on its elastic IP (the control plane endpoint) is
// reachable on this machine, as the public address is on the Internet; on Linux all of
// 127.0.0.0/8 answers without configuration. The random start keeps simulators that run at the
// same time on one machine (tests, benchmarks) from handing out the same address. Devices' own
// addresses stay in public-looking ranges: nothing listens on them.
func elasticAddress(n int) string {
	n %= elasticSpace
	return fmt.Sprintf("127.%d.%d.%d", 40+n/65536, (n/256)%256, n%256)
}

// elasticSpace is how many addresses elasticAddress spans.
const elasticSpace = 215 * 65536
