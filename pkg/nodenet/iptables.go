package nodenet

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/vishvananda/netns"

	"github.com/flotilla-dev/flotilla/pkg/process"
)

// tableRules are the iptables rules of one table that Flotilla owns: chains of its own, with
// their rules in order, and the rules in built-in chains that jump to them.
type tableRules struct {
	// ipv6 makes them ip6tables rules.
	ipv6   bool
	table  string
	chains map[string][]string
	jumps  []jump
}

// program is the iptables program of t's address family, with its -restore variant.
func (t tableRules) program() (iptables, restore string) {
	if t.ipv6 {
		return "ip6tables", "ip6tables-restore"
	}
	return "iptables", "iptables-restore"
}

// jump is a rule of a built-in chain, without "-A <chain>".
type jump struct {
	chain string
	rule  string
}

// ensureRules makes each table hold rules: when a chain of its own differs from what rules say,
// or a jump is missing, one iptables-restore --noflush replaces the chains and inserts the
// missing jumps atomically. ns is the network namespace to work in, "" for the host's.
func ensureRules(ctx context.Context, ns string, rules []tableRules) error {
	return withNetNS(ns, func() error {
		for _, t := range rules {
			program, restoreProgram := t.program()
			current, err := run(ctx, program, "-w", "-t", t.table, "-S")
			if err != nil {
				return err
			}
			restore := t.restore(strings.Split(current, "\n"))
			if restore == "" {
				continue
			}
			cmd := exec.CommandContext(ctx, restoreProgram, "-w", "--noflush")
			cmd.Stdin = strings.NewReader(restore)
			if out, err := cmd.CombinedOutput(); err != nil {
				return fmt.Errorf("%s of the %s table: %w: %s", restoreProgram, t.table, err, bytes.TrimSpace(out))
			}
		}
		return nil
	})
}

// restore returns the iptables-restore input that makes current (the lines of iptables -S)
// hold t, or "" when it does.
func (t tableRules) restore(current []string) string {
	var missing []jump
	for _, j := range t.jumps {
		if !slices.Contains(current, "-A "+j.chain+" "+j.rule) {
			missing = append(missing, j)
		}
	}
	changed := len(missing) > 0
	names := make([]string, 0, len(t.chains))
	for name, want := range t.chains {
		names = append(names, name)
		var have []string
		for _, line := range current {
			if strings.HasPrefix(line, "-A "+name+" ") {
				have = append(have, line)
			}
		}
		changed = changed || !slices.Contains(current, "-N "+name) || !slices.Equal(have, want)
	}
	if !changed {
		return ""
	}
	slices.Sort(names)
	var b strings.Builder
	fmt.Fprintf(&b, "*%s\n", t.table)
	for _, name := range names {
		fmt.Fprintf(&b, ":%s - [0:0]\n", name)
	}
	for _, name := range names {
		for _, rule := range t.chains[name] {
			b.WriteString(rule + "\n")
		}
	}
	for _, j := range missing {
		fmt.Fprintf(&b, "-I %s 1 %s\n", j.chain, j.rule)
	}
	b.WriteString("COMMIT\n")
	return b.String()
}

// deleteRules removes t's jumps and chains from the namespace ns ("" for the host's); what is
// already gone is not an error.
func deleteRules(ctx context.Context, ns string, t tableRules) error {
	return withNetNS(ns, func() error {
		program, _ := t.program()
		current, err := run(ctx, program, "-w", "-t", t.table, "-S")
		if err != nil {
			return err
		}
		lines := strings.Split(current, "\n")
		var errs []error
		for _, j := range t.jumps {
			for _, line := range lines {
				if line != "-A "+j.chain+" "+j.rule {
					continue
				}
				// iptables -S quotes some values (a cgroup's path), which its parser takes without.
				args := strings.Fields(strings.ReplaceAll(j.rule, `"`, ""))
				if _, err := run(ctx, program, append([]string{"-w", "-t", t.table, "-D", j.chain}, args...)...); err != nil {
					errs = append(errs, err)
				}
			}
		}
		for name := range t.chains {
			if !slices.Contains(lines, "-N "+name) {
				continue
			}
			if _, err := run(ctx, program, "-w", "-t", t.table, "-F", name); err != nil {
				errs = append(errs, err)
			}
			if _, err := run(ctx, program, "-w", "-t", t.table, "-X", name); err != nil {
				errs = append(errs, err)
			}
		}
		return errors.Join(errs...)
	})
}

// run runs program, iptables or ip6tables, and returns its output.
func run(ctx context.Context, program string, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, program, args...).CombinedOutput()
	if err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			return "", fmt.Errorf("%s is not installed: install Debian's iptables package (apt-get install iptables)", program)
		}
		return "", fmt.Errorf("%s %s: %w: %s", program, strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return string(out), nil
}

// withNetNS runs fn in the network namespace at path ("" runs fn where the caller is), on a
// thread of its own (process.InThread): programs fn starts from it run in the namespace too.
func withNetNS(path string, fn func() error) error {
	if path == "" {
		return fn()
	}
	target, err := netns.GetFromPath(path)
	if err != nil {
		return fmt.Errorf("opening network namespace %s: %w", path, err)
	}
	defer func() { _ = target.Close() }()
	return process.InThread(func() error {
		if err := netns.Set(target); err != nil {
			return fmt.Errorf("entering network namespace %s: %w", path, err)
		}
		return fn()
	})
}

// disableIPv6 removes IPv6 from the interface iface of the caller's network namespace ("all"
// for every interface, "default" for those made later): the nodes' networks are IPv4 only, and
// without it an interface has an IPv6 link-local address that the iptables rules, IPv4 only,
// would not cover. A kernel without IPv6 has nothing to disable.
func disableIPv6(iface string) error {
	if _, err := os.Stat("/proc/sys/net/ipv6"); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return writeSysctl("net/ipv6/conf/"+iface+"/disable_ipv6", "1")
}

// writeSysctl writes value to /proc/sys/<name>. /proc/sys/net belongs to the network namespace
// of the thread that opens it.
func writeSysctl(name, value string) error {
	path := filepath.Join("/proc/sys", name)
	if err := os.WriteFile(path, []byte(value), 0o644); err != nil { //nolint:gosec // a sysctl
		return fmt.Errorf("setting %s: %w", strings.ReplaceAll(name, "/", "."), err)
	}
	return nil
}
