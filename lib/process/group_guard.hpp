#pragma once
// Children's process groups die with the driver, even when the driver is
// SIGKILLed. PR_SET_PDEATHSIG reaches only the direct child (a runner, a
// fork server); what that child started itself (a helper it forked, a tool
// it ran) would outlive it. A guard process, forked once on first use, in
// its own session, holds one end of a socket whose other end only this
// process holds (close-on-exec). The driver registers each child's group
// with it; when the socket closes (the driver exited, however it died), the
// guard SIGKILLs the groups still registered and exits.

#include <sys/types.h>

namespace aoti_bisect {

// Registers `pgid` (a child that leads its own group). Starts the guard on
// first use; where it cannot be started, the groups are unguarded (the
// children still have PR_SET_PDEATHSIG) and nothing is thrown.
void guard_group(pid_t pgid);
// The group has been reaped and killed: the guard forgets it.
void release_group(pid_t pgid);
// The guard's pid, -1 when none runs (for tests).
pid_t group_guard_pid();

}  // namespace aoti_bisect
