//go:build !linux

package stepvec

// cpuNanos is 0 where a thread's CPU time is not at hand: the benchmarks
// then report no CPU time.
func cpuNanos() int64 { return 0 }
