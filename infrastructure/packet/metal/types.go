package metal

import "time"

// Device states as the API reports them in Device.State.
const (
	DeviceStateQueued         = "queued"
	DeviceStateProvisioning   = "provisioning"
	DeviceStateActive         = "active"
	DeviceStateFailed         = "failed"
	DeviceStateInactive       = "inactive"
	DeviceStateDeprovisioning = "deprovisioning"
)

// IP reservation types for IPReservationRequest.Type.
const (
	IPTypePublicIPv4 = "public_ipv4"
	IPTypeGlobalIPv4 = "global_ipv4"
)

// Href is a link to another API object.
type Href struct {
	Href string `json:"href,omitempty"`
}

// Project is a Metal project, the owner of devices and IP reservations.
type Project struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"created_at,omitzero"`
	Href      string    `json:"href,omitempty"`
}

// Slug names a plan, operating system or similar catalogue entry.
type Slug struct {
	ID   string `json:"id,omitempty"`
	Slug string `json:"slug,omitempty"`
	Name string `json:"name,omitempty"`
}

// Location is a metro or facility.
type Location struct {
	ID   string `json:"id,omitempty"`
	Code string `json:"code"`
	Name string `json:"name,omitempty"`
}

// IPAddress is an address assigned to a device (an IP assignment).
type IPAddress struct {
	ID            string `json:"id"`
	Address       string `json:"address"`
	AddressFamily int    `json:"address_family"`
	Netmask       string `json:"netmask,omitempty"`
	CIDR          int    `json:"cidr"`
	Gateway       string `json:"gateway,omitempty"`
	Network       string `json:"network,omitempty"`
	Public        bool   `json:"public"`
	Management    bool   `json:"management"`
	AssignedTo    *Href  `json:"assigned_to,omitempty"`
	Href          string `json:"href,omitempty"`
}

// Device is a bare-metal server.
type Device struct {
	ID                    string      `json:"id"`
	Hostname              string      `json:"hostname"`
	State                 string      `json:"state"`
	Tags                  []string    `json:"tags"`
	Userdata              string      `json:"userdata,omitempty"`
	BillingCycle          string      `json:"billing_cycle,omitempty"`
	Plan                  *Slug       `json:"plan,omitempty"`
	OperatingSystem       *Slug       `json:"operating_system,omitempty"`
	Metro                 *Location   `json:"metro,omitempty"`
	Facility              *Location   `json:"facility,omitempty"`
	IPAddresses           []IPAddress `json:"ip_addresses"`
	HardwareReservationID string      `json:"hardware_reservation_id,omitempty"`
	Project               *Href       `json:"project,omitempty"`
	CreatedAt             time.Time   `json:"created_at,omitzero"`
	UpdatedAt             time.Time   `json:"updated_at,omitzero"`
	Href                  string      `json:"href,omitempty"`
}

// HasTag reports whether d carries tag.
func (d *Device) HasTag(tag string) bool {
	for _, t := range d.Tags {
		if t == tag {
			return true
		}
	}
	return false
}

// DeviceCreateRequest is the body of POST /projects/{id}/devices.
type DeviceCreateRequest struct {
	Hostname              string   `json:"hostname"`
	Plan                  string   `json:"plan"`
	Metro                 string   `json:"metro,omitempty"`
	Facility              []string `json:"facility,omitempty"`
	OperatingSystem       string   `json:"operating_system"`
	BillingCycle          string   `json:"billing_cycle,omitempty"`
	Userdata              string   `json:"userdata,omitempty"`
	Tags                  []string `json:"tags,omitempty"`
	ProjectSSHKeys        []string `json:"project_ssh_keys,omitempty"`
	HardwareReservationID string   `json:"hardware_reservation_id,omitempty"`
}

// IPReservationRequest is the body of POST /projects/{id}/ips.
type IPReservationRequest struct {
	Type     string   `json:"type"`
	Quantity int      `json:"quantity"`
	Metro    string   `json:"metro,omitempty"`
	Facility string   `json:"facility,omitempty"`
	Tags     []string `json:"tags,omitempty"`
	Details  string   `json:"details,omitempty"`
}

// IPReservation is a block of addresses reserved in a project, such as an elastic IP.
type IPReservation struct {
	ID            string    `json:"id"`
	Type          string    `json:"type"`
	Address       string    `json:"address"`
	Network       string    `json:"network"`
	Netmask       string    `json:"netmask,omitempty"`
	CIDR          int       `json:"cidr"`
	AddressFamily int       `json:"address_family"`
	Public        bool      `json:"public"`
	Tags          []string  `json:"tags"`
	Details       string    `json:"details,omitempty"`
	Metro         *Location `json:"metro,omitempty"`
	Project       *Href     `json:"project,omitempty"`
	Assignments   []Href    `json:"assignments"`
	CreatedAt     time.Time `json:"created_at,omitzero"`
	Href          string    `json:"href,omitempty"`
}

// HasTag reports whether r carries tag.
func (r *IPReservation) HasTag(tag string) bool {
	for _, t := range r.Tags {
		if t == tag {
			return true
		}
	}
	return false
}

// IPAssignmentRequest is the body of POST /devices/{id}/ips.
type IPAssignmentRequest struct {
	Address string `json:"address"`
}

// Meta is the pagination block of list responses.
type Meta struct {
	Total       int   `json:"total"`
	CurrentPage int   `json:"current_page"`
	LastPage    int   `json:"last_page"`
	Next        *Href `json:"next,omitempty"`
}

// DeviceList is the body of GET /projects/{id}/devices.
type DeviceList struct {
	Devices []Device `json:"devices"`
	Meta    Meta     `json:"meta"`
}

// IPReservationList is the body of GET /projects/{id}/ips.
type IPReservationList struct {
	IPAddresses []IPReservation `json:"ip_addresses"`
	Meta        Meta            `json:"meta"`
}

// IPAssignmentList is the body of GET /devices/{id}/ips.
type IPAssignmentList struct {
	IPAddresses []IPAddress `json:"ip_addresses"`
}

// ProjectList is the body of GET /projects.
type ProjectList struct {
	Projects []Project `json:"projects"`
	Meta     Meta      `json:"meta"`
}

// ErrorResponse is the body of an error response.
type ErrorResponse struct {
	Errors []string `json:"errors,omitempty"`
	Error  string   `json:"error,omitempty"`
}
