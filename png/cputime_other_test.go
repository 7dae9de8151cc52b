//go:build !unix

package png

// cpuNanos is 0 where getrusage is not available: the benchmarks then
// report no CPU time.
func cpuNanos() int64 { return 0 }
