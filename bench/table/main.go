package main

import (
	"bufio"
	"fmt"
	"os"
	"regexp"
	"strings"
	"text/tabwriter"
)

// targets are the goals the issues set, keyed by benchmark name and metric unit.
var targets = map[string]string{
	"BenchmarkManagementCluster/create-s":                               "≤ 45",
	"BenchmarkManagementCluster/cp-p50-s":                               "≤ 8",
	"BenchmarkManagementCluster/cp-10-at-once-s":                        "≤ 40",
	"BenchmarkManagementCluster/manager-rss-MiB":                        "reported",
	"BenchmarkManagementCluster/manager-rss-per-cluster-MiB":            "≤ 2",
	"BenchmarkManagementCluster/workload-create-p50-s":                  "≤ 10",
	"BenchmarkManagementCluster/management-vs-workload-x":               "≥ 3",
	"BenchmarkManagementCluster/idle-req-per-s-per-cluster":             "≤ 0.1",
	"BenchmarkManagementCluster/idle-writes":                            "0",
	"BenchmarkManagementCluster/idle-req-per-s-per-cluster-with-addons": "reported",
	"BenchmarkManagementCluster/idle-writes-with-addons":                "0",
	"BenchmarkManagementCluster/packages-10x3-s":                        "≤ 30",
	"BenchmarkManagementCluster/package-ready-p50-s":                    "≤ 3",
	"BenchmarkManagementCluster/addon-fleet-s":                          "≤ 15",
	"BenchmarkManagementCluster/addon-releases-per-s":                   "≥ 5",
	"BenchmarkManagementCluster/drift-restore-p50-s":                    "≤ 10",
	"BenchmarkManagementCluster/resync-workload-writes":                 "0",
	"BenchmarkManagementCluster/resync-chart-pulls":                     "0",
	"BenchmarkManagementCluster/resync-new-revisions":                   "0",
	"BenchmarkUpgradeWorkloadCluster/upgrade-s":                         "≤ 90",
	"BenchmarkPackagesHeadOfLine/hol-ratio":                             "≤ 1.2",
	"BenchmarkAddonsHeadOfLine/hol-ratio":                               "≤ 1.2",
	"BenchmarkPackagesArchive/export-s":                                 "≤ 30",
	"BenchmarkPackagesArchive/import-s":                                 "≤ 30",
	"BenchmarkPackagesArchive/archive-MiB":                              "reported",
	"BenchmarkPacket/packet-provision-s":                                "≤ 30",
	"BenchmarkPacket/packet-ready-s":                                    "reported",
	"BenchmarkPacket/metal-calls-per-machine":                           "reported",
	"BenchmarkPacket/metal-calls-per-machine-hour":                      "reported",
	"BenchmarkInMemory/inmemory-ready-p50-s":                            "≤ 5",
	"BenchmarkInMemory/inmemory-50-ready-s":                             "≤ 60",
	"BenchmarkInMemory/inmemory-load1":                                  "reported",
	"BenchmarkRealNode/real-node-ready-s":                               "≤ 10",
	"BenchmarkRealNode/hello-ready-s":                                   "≤ 10",
	"BenchmarkRealNode/real-node-MiB":                                   "reported",
}

var suffix = regexp.MustCompile(`-\d+$`)

func main() {
	type row struct{ bench, unit, value string }
	var rows []row
	failed := false
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		fmt.Fprintln(os.Stderr, line)
		if strings.HasPrefix(line, "FAIL") || strings.HasPrefix(line, "--- FAIL") {
			failed = true
		}
		fields := strings.Fields(line)
		if len(fields) < 4 || !strings.HasPrefix(fields[0], "Benchmark") {
			continue
		}
		name := suffix.ReplaceAllString(fields[0], "")
		for i := 2; i+1 < len(fields); i += 2 {
			if fields[i+1] == "ns/op" {
				continue
			}
			rows = append(rows, row{name, fields[i+1], fields[i]})
		}
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 2, 2, ' ', 0)
	fmt.Fprintln(tw, "\nBENCHMARK\tMETRIC\tVALUE\tTARGET")
	for _, r := range rows {
		target := targets[r.bench+"/"+r.unit]
		if target == "" {
			target = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.bench, r.unit, r.value, target)
	}
	_ = tw.Flush()
	if failed {
		fmt.Fprintln(os.Stderr, "some benchmarks failed; see above")
		os.Exit(1)
	}
}
