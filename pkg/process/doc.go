// Package process keeps long-running local programs that must outlive the program that
// started them: the etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok
// processes of Flotilla's local control planes, and the Flotilla manager the CLI starts.
//
// # Model
//
// A Keeper owns two directories. RunDir holds, for every process it started, a pid file
// (<name>.pid: the decimal pid and a newline, usable as `kill $(cat etcd.pid)`) and a record
// (<name>.json: the exact command line, the extra environment, working directory and ports, the
// kernel start time of the process, and the history of its restarts), and .lock. LogDir holds <name>.log, which receives the process's stdout and stderr, appended
// across restarts (each start writes a "==> <time> starting <command line>" line) and rotated
// once to <name>.log.1 past 10 MiB. Every file is 0600, every directory 0700.
//
// A Spec describes the desired process: a Name, the absolute Path of the program, its Args,
// extra Env, a working Dir and the Ports it listens on. Keeper.Ensure makes the desired
// process run:
//
//   - when the pid file names a live process (not a zombie) whose /proc/<pid>/cmdline and
//     start time are those recorded, and whose /proc/<pid>/exe is the program, that process is
//     ours. If it was started with the Spec's command line and Env it is adopted
//     (Process.Adopted is true) and nothing is started;
//   - when it is ours but was started differently (another version of the program, other
//     flags, another Env: callers put a digest of the files a process reads in Env to have it
//     restarted when they change), it is stopped and the Spec is started instead, with a new
//     history;
//   - when the record describes the Spec but its process exited, it is started again under the
//     restart policy below;
//   - otherwise the pid file is stale (the pid now belongs to someone else, the record is
//     unreadable) and the Spec is started. A pid that is not ours is never signalled.
//
// Every started process carries the absolute path of its record in its environment
// (FLOTILLA_PROCESS). A starter killed after exec(2) but before it wrote the record leaves a
// process no record names; the next start of the same Spec finds it by that mark, with the
// Spec's command line and program, and adopts and records it instead of starting a second copy
// that would find the first one's ports taken. A marked process with another command line (a
// child that inherited the mark) is left alone.
//
// Because adoption compares command lines, a program must keep the one it was started with: a
// shell script that execs another program, or a program that rewrites its argv, is never
// adopted (and its stale pid file never lets it be signalled either).
//
// A Keeper value holds no state besides its two directories: a fresh value, in the same
// program or another one started later, finds and adopts the processes an earlier one started.
// Running reports whether a recorded process is alive and ours; Inspect returns it with its
// history; Names lists the recorded ones.
//
// # Records, restarts and back-off
//
// A record stays after its process exits, until Stop: it is the declaration that the process
// should run. Keep starts a recorded process again from its record alone, which is what the
// supervisor daemon (package supervisor) does for every recorded process of a Flotilla home.
// Ensure and Keep apply one restart policy, kept in the record's History; a program that runs a
// child itself and waits for it applies the same one through History.Exited (the in-memory
// provider's process, package inmemory):
//
//   - the first call that finds the process gone notices the exit: how it ended ("exit status
//     1", "signal: killed") when this program had started it, else "exited";
//   - a process that ran at least StableAfter (30 s) had an accident and starts again at once;
//     one that exited sooner failed, and so did a start that could not happen (a program gone,
//     a port taken). The Nth consecutive failure waits BackOff(N): 1 s, 2 s, 4 s ... capped at
//     MaxBackOff (1 minute). Until then Ensure and Keep return the process with PID 0;
//   - from CrashLoopFailures (3) consecutive failures on, History.CrashLooping says so, until the
//     process has run StableAfter again;
//   - Forgive forgets a process's failures and back-off, as an explicit start by a user
//     (`flotilla start`) means, an exit not yet noticed (a kill with the machine) included;
//   - before a start, each of Spec.Ports must be free (within two seconds, for a server that was
//     just killed); otherwise the start fails with a PortInUseError, recorded in
//     History.PortInUse: a taken port is reported as such, not as a crash every 500 ms.
//
// # Locking
//
// Methods do not lock: two callers ensuring the same name at the same time could both start
// it. Every program that acts on a RunDir another program may act on (a CLI, a manager, the
// supervisor daemon) does so under Lock, an flock on RunDir/.lock; LockExisting creates nothing
// and reports a RunDir that was removed, so that a deleted cluster is not brought back.
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
// Keeper.Stop sends SIGTERM to the process group of a process it recognises as its own,
// waits up to the given grace period (10 s in DefaultStopTimeout), then sends SIGKILL, and
// removes the pid file and record. StopAll stops every process that has a pid file in RunDir.
// A process that is not running, or not ours, only has its files removed. Without its record,
// nothing starts it again.
//
// The package is Linux-only: it relies on /proc.
package process
