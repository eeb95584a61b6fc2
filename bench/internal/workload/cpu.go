package main

import (
	"os"

	"golang.org/x/sys/unix"
)

// cpuTimes returns the CPU time, in ns, used so far by this process and
// by its parent (every thread of each), the parent's -1 when its clock
// cannot be read.
func cpuTimes() (self, parent int64) {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_PROCESS_CPUTIME_ID, &ts) == nil {
		self = ts.Nano()
	}
	parent = -1
	if unix.ClockGettime(processClock(os.Getppid()), &ts) == nil {
		parent = ts.Nano()
	}
	return self, parent
}

// processClock is the clock id of process pid's CPU time, what glibc's
// clock_getcpuclockid returns (the kernel's MAKE_PROCESS_CPUCLOCK with
// CPUCLOCK_SCHED: every thread's time, in ns).
func processClock(pid int) int32 {
	const cpuclockSched = 2
	return int32((^pid)<<3 | cpuclockSched)
}
