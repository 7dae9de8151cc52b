package stepvec

import "syscall"

// rusageThread is Linux's RUSAGE_THREAD: the calling thread alone.
const rusageThread = 1

// cpuNanos is the CPU time the calling thread has used (user and system):
// what a benchmark on a machine shared with other work reports beside
// its wall time, which counts the time others held the core. The caller
// locks its goroutine to its thread; the runtime's background work on
// other threads (the scavenger, the sweeper) is not counted.
func cpuNanos() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(rusageThread, &ru) != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
