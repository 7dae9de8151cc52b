// Package batch owns batch post-training: a jobs file (defaults, jobs and
// matrices, expanded into an ordered list of jobs with stable IDs), the
// out folder's layout (one folder per job holding its resolved
// configuration, log, models and, written last, result.json), running a
// shard of the jobs on a local worker pool (skipping done jobs, resuming
// interrupted ones from their checkpoints, recording failures), the
// status of a batch, collecting the results into results.csv,
// results.json and a self-contained report.html, and the thin executors
// that hand the same jobs to a cluster's own engine: a Slurm job array
// script and a Kubernetes Indexed Job manifest.
//
// Job k belongs to shard k mod N, so a Slurm array index or a Kubernetes
// completion index is all a worker needs. The jobs themselves are
// package job's; how a job's keys become a job configuration (the
// commands' flags) is the caller's Resolver.
package batch
