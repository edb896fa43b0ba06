// Package supervisor runs the one supervisor of a Flotilla home: a long-running program
// (`flotilla supervisor`) that keeps every process recorded under the home running, restarting
// what exits with a capped exponential back-off. It outlives the commands that start it, as the
// embedded registry does, and holds no credentials: it reads process records and starts
// programs, nothing else.
//
// # What it supervises
//
// The programs that run a process record it (package process: <dir>/run/<name>.pid and
// <name>.json, the exact command line, environment, working directory and ports, plus the
// history of its exits). The record is the declaration: a process is supervised from its first
// start until process.Keeper.Stop removes its record. Options.Dirs names the directories to
// look in; Flotilla passes $FLOTILLA_HOME/clusters/* (every local control plane, and the manager
// of a management cluster, which is recorded in its cluster's directory) and
// $FLOTILLA_HOME/registry.
//
// Every Options.Interval (a second) Run looks at each record. A process that does not run, and
// is not waiting out a back-off it already has, is handed to process.Keeper.Keep under the
// lock of its directory (process.Keeper.LockExisting), which starts it again from the record
// under the restart policy of package process: at once after a stable run, after 1, 2, 4 ... 60 s
// after consecutive quick exits, and not at all while one of its ports is taken, which is
// recorded as such. The history lands in the record, where the local provider's LocalControlPlane
// reconciler reads it into a condition and events. Each directory is handled by a goroutine of
// its own, so that one slow start does not hold up the others.
//
// # Races
//
//   - Two supervisors of one home: Run first takes an exclusive flock on
//     $FLOTILLA_HOME/supervisor/supervisor.lock and holds it while it runs; a second Run waits for
//     it, as a standby, and takes over when the first exits. Ensure starts one only when no one
//     holds that lock, under a second lock (the supervisor's own run directory's), so that
//     commands started at the same time start one supervisor.
//   - The supervisor and another program (the CLI, a manager's reconciler) starting the same
//     process: both do it under the directory's lock and through process.Keeper, which
//     adopts a process that runs; the second finds the first's process running.
//   - Deletion: controlplane.Delete stops every process under the directory's lock, which removes
//     their records, then removes the directory. A supervisor waiting for that lock finds the
//     directory gone and creates nothing; one that looks later finds no record.
//   - clusterctl move: the records do not say which management cluster's objects describe a
//     control plane, so moving them (and the delete-for-move that leaves the processes running)
//     changes nothing for the supervisor.
//   - Exiting when idle: a supervisor with nothing recorded for Options.IdleExit (10 s) exits.
//     It lets go of its lock while it holds the start lock, then looks once more, and a command
//     records its process before it calls Ensure: either the supervisor sees the record and
//     stays, or Ensure sees no supervisor and starts one. A home that was removed meanwhile is
//     left removed: the supervisor exits without creating its lock again.
//   - Stopping when the last process goes: a command that removes the last record of the home
//     (deleting its last cluster with no registry running, stopping the registry with no cluster
//     left) calls StopIfIdle, which stops the supervisor Ensure started, under the same start
//     lock and with the same look at the records as the idle exit, rather than leave it running
//     for IdleExit.
//
// # Files
//
//	$FLOTILLA_HOME/supervisor/supervisor.lock   held by the running supervisor
//	$FLOTILLA_HOME/supervisor/run/supervisor.*  its pid file and record (when Ensure started it)
//	$FLOTILLA_HOME/supervisor/logs/supervisor.log
package supervisor
