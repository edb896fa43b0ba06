package tether

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/flotilla-dev/flotilla/pkg/process"
)

// startOnADiscardedThread starts a child with start from a thread that the Go runtime discards
// right after (process.InThread), and returns the child's exit.
func startOnADiscardedThread(t *testing.T, start func(*exec.Cmd) error) <-chan error {
	t.Helper()
	cmd := exec.Command("sleep", "60")
	if err := process.InThread(func() error { return start(cmd) }); err != nil {
		t.Fatalf("starting sleep: %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	return exited
}

func TestAChildOutlivesTheThreadThatStartedIt(t *testing.T) {
	g := NewWithT(t)

	// What Start prevents: a child started with the parent-death signal by a thread that ends
	// is killed with that thread.
	direct := startOnADiscardedThread(t, func(cmd *exec.Cmd) error {
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		return cmd.Start()
	})
	g.Eventually(direct, 5*time.Second).Should(Receive(MatchError(ContainSubstring("signal: killed"))))

	tethered := startOnADiscardedThread(t, Start)
	g.Consistently(tethered, 2*time.Second).ShouldNot(Receive(), "the tethered child was killed with the thread that asked for it")
}

// The helper process of TestAChildDiesWithItsProcess: it starts sleep with Start, prints its
// pid and waits to be killed.
const helperEnv = "FLOTILLA_TETHER_TEST_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "1" {
		cmd := exec.Command("sleep", "60")
		if err := Start(cmd); err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Println(cmd.Process.Pid)
		time.Sleep(time.Minute)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestAChildDiesWithItsProcess(t *testing.T) {
	g := NewWithT(t)
	helper := exec.Command(os.Args[0], "-test.run=^$")
	helper.Env = append(os.Environ(), helperEnv+"=1")
	out, err := helper.StdoutPipe()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(helper.Start()).To(Succeed())
	t.Cleanup(func() { _ = helper.Process.Kill(); _ = helper.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	g.Expect(err).NotTo(HaveOccurred())
	child, err := strconv.Atoi(strings.TrimSpace(line))
	g.Expect(err).NotTo(HaveOccurred(), "the helper printed %q", line)
	g.Expect(alive(child)).To(BeTrue(), "the child is not running")

	g.Expect(helper.Process.Kill()).To(Succeed())
	g.Eventually(func() bool { return alive(child) }, 5*time.Second).Should(BeFalse(), "the child outlived its process")
}

// alive: pid names a process that has not exited (a zombie has).
func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	_, rest, _ := strings.Cut(string(stat), ") ")
	return !strings.HasPrefix(rest, "Z")
}
