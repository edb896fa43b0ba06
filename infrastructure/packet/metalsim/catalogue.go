package metalsim

// The catalogue the simulator accepts. It is a subset of what the public service offers, enough
// for realistic specs and for the "unknown metro or plan" errors.
var (
	defaultMetros = []string{"am", "at", "ch", "da", "dc", "fr", "hk", "ld", "la", "md", "ml", "mt", "ny", "pa", "se", "sg", "sl", "sp", "sv", "sy", "ty", "tr"}
	defaultPlans  = []string{
		"c3.small.x86", "c3.medium.x86", "c3.large.arm64", "m3.small.x86", "m3.large.x86",
		"n3.xlarge.x86", "s3.xlarge.x86", "a3.large.x86", "m4.metal.x86",
	}
	defaultOperatingSystems = []string{
		"ubuntu_20_04", "ubuntu_22_04", "ubuntu_24_04", "debian_11", "debian_12", "rocky_8", "rocky_9",
		"alma_9", "flatcar_stable", "custom_ipxe",
	}
	billingCycles = []string{"hourly", "daily", "monthly", "yearly"}
)
