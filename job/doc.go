// Package job owns paretonav's three kinds of job — tune (one model toward
// a criterion), front (N models spread along the Pareto front) and eval
// (task losses and g(θ) of a model on data) — from a resolved
// configuration to the files they write: checking the configuration,
// loading the model and the data (through a Loader that shares them
// between jobs), running the training loop and writing the models, logs
// and reports.
//
// A job's configuration is a plain struct (TuneConfig, FrontConfig,
// EvalConfig) whose fields are the flags of the command of the same name;
// its Prepare method is the one place where it is checked and resolved.
// The paretonav commands fill these structs from their flags and print
// the outcomes; batch runs fill them from a jobs file. Plots are drawn by
// the caller through hooks, so this package draws nothing.
package job

// Version is paretonav's version, recorded in the models jobs write.
const Version = "0.1.0-dev"
