//go:build unix

package png

import "syscall"

// cpuNanos is the CPU time this process has used (user and system, all
// threads): what a benchmark on a machine shared with other work reports
// beside its wall time, which counts the time others held the cores.
func cpuNanos() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
