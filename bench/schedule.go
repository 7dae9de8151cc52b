package bench

import (
	"errors"
	"sort"
	"sync"
)

// job is a unit of work of a phase: size is its cost in model-steps (or
// scorings), run does it.
type job struct {
	size int
	run  func() error
}

// order sorts jobs largest first (stable): the longest-processing-time
// rule, under which a pool that hands the next job to the first free
// worker balances the phase well (phase 2's 5-model runs first, then
// linear's single-model runs fill the gaps).
func order(jobs []job) {
	sort.SliceStable(jobs, func(i, j int) bool { return jobs[i].size > jobs[j].size })
}

// runJobs runs jobs in order (largest first) on workers goroutines, each
// taking the next job when free, and returns the errors joined.
func runJobs(jobs []job, workers int) error {
	order(jobs)
	next := make(chan job)
	errs := make([]error, 0, len(jobs))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range max(workers, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range next {
				if err := j.run(); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		}()
	}
	for _, j := range jobs {
		next <- j
	}
	close(next)
	wg.Wait()
	return errors.Join(errs...)
}

// makespan returns the time runJobs takes on sizes with workers workers
// if a job of size s takes s units: the largest-first list schedule that
// runJobs follows.
func makespan(sizes []int, workers int) int {
	jobs := make([]job, len(sizes))
	for i, s := range sizes {
		jobs[i].size = s
	}
	order(jobs)
	free := make([]int, max(workers, 1)) // when each worker is next free
	for _, j := range jobs {
		w := 0
		for i := range free {
			if free[i] < free[w] {
				w = i
			}
		}
		free[w] += j.size
	}
	end := 0
	for _, f := range free {
		end = max(end, f)
	}
	return end
}
