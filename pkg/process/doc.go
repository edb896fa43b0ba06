// Package process supervises long-running local programs that must outlive the program that
// started them: the etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok
// processes of Flotilla's local control planes, and the Flotilla manager the CLI starts.
//
// # Model
//
// A Supervisor owns two directories. RunDir holds, for every process it started, a pid file
// (<name>.pid: the decimal pid and a newline, usable as `kill $(cat etcd.pid)`) and a record
// (<name>.json: the exact command line, the extra environment and the kernel start time of the
// process). LogDir holds <name>.log, which receives the process's stdout and stderr, appended
// across restarts (each start writes a "==> <time> starting <command line>" line) and rotated
// once to <name>.log.1 past 10 MiB. Every file is 0600, every directory 0700.
//
// A Spec describes the desired process: a Name, the absolute Path of the program, its Args,
// extra Env and a working Dir. Supervisor.Ensure makes the desired process run:
//
//   - when the pid file names a live process (not a zombie) whose /proc/<pid>/cmdline and
//     start time are those recorded, and whose /proc/<pid>/exe is the program, that process is
//     ours. If it was started with the Spec's command line and Env it is adopted
//     (Process.Adopted is true) and nothing is started;
//   - when it is ours but was started differently (another version of the program, other
//     flags, another Env: callers put a digest of the files a process reads in Env to have it
//     restarted when they change), it is stopped and the Spec is started instead;
//   - otherwise the pid file is stale (the process died, or the pid now belongs to someone
//     else) and the Spec is started. A pid that is not ours is never signalled.
//
// Because adoption compares command lines, a program must keep the one it was started with: a
// shell script that execs another program, or a program that rewrites its argv, is never
// adopted (and its stale pid file never lets it be signalled either).
//
// A Supervisor value holds no state besides its two directories: a fresh value, in the same
// program or another one started later, finds and adopts the processes an earlier one started.
// Running reports whether a recorded process is alive and ours; Names lists the recorded ones.
//
// # Detaching and reaping
//
// Processes are started with setsid(2), in a session and process group of their own, with
// stdin from /dev/null and stdout/stderr to the log file, and a small fixed environment (PATH,
// HOME, USER, TMPDIR, LANG, TZ, plus Spec.Env), so neither a signal sent to the starter's
// process group, nor the starter's exit, nor its environment reaches them; they are not tied
// to any context. While the starter lives, a goroutine waits for each child so that a child
// that exits is reaped and does not linger as a zombie; after the starter exits, the processes
// belong to init, which reaps them in its own time.
//
// Alive reads /proc/<pid>/stat and treats a zombie as dead. Gone is stricter: it waits until
// every thread has exited, because the leader of a multi-threaded Go program shows as a zombie
// while its other threads still hold its listening sockets; Stop waits for Gone so that the
// next process can bind the same port.
//
// # Stopping
//
// Supervisor.Stop sends SIGTERM to the process group of a process it recognises as its own,
// waits up to the given grace period (10 s in DefaultStopTimeout), then sends SIGKILL, and
// removes the pid file and record. StopAll stops every process that has a pid file in RunDir.
// A process that is not running, or not ours, only has its files removed.
//
// # Concurrency
//
// Methods do not lock: two callers ensuring the same name at the same time could both start
// it. Callers that may race (several reconcilers, a CLI next to a manager) serialise with a
// file lock around their use of a Supervisor, as pkg/controlplane does.
//
// The package is Linux-only: it relies on /proc.
package process
