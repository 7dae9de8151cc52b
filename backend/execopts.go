package backend

import "sync/atomic"

// execOptions are the executor's switches between a fast path and the
// plain path whose values it must give bit for bit; defaultExec turns
// every fast path on, and tests turn one off (Options.exec, or a Model's
// run between its steps) to compare. A Model's programs read its options
// when they run.
type execOptions struct {
	// sumInPlace lets a gradient sum write over an operand that dies
	// with it (program.sumInto).
	sumInPlace bool
	// copyInPlace lets a plain copy (a Reshape's value, or its gradient)
	// take over the buffer of the value it copies when that value dies
	// with it (program.takeCopied).
	copyInPlace bool
	// skipZeroSums lets a gradient sum one of whose operands is a zero
	// value take the other operand instead of adding
	// (program.sumWithZero).
	skipZeroSums bool
	// poolInts lets int64 values of ops writing into a given buffer live
	// in pool buffers (program.pooled).
	poolInts bool
	// reuseTensors offers an op the dead tensor that wrapped the buffer
	// it is given, to return as its value (program.offer).
	reuseTensors bool
	// fuseBatchNormRelu runs a float32 BatchNorm read only by a Relu
	// fused with it (fuse.go, fusegrad.go).
	fuseBatchNormRelu bool
	// gradsIntoJacobian makes the ops computing parameter gradients write
	// them into their places in the Jacobian's rows, where they can
	// (float32 ops writing into a given buffer, gradient sums), instead
	// of into pool buffers that are then copied there: at 44 M parameters
	// a copy of 177 MB a task.
	gradsIntoJacobian bool
	// rematMinBytes is the least memory that recomputing cheap forward
	// values (program.cheap) in the backward passes must save: below it,
	// as in small models (LeNet, the small MTAN fixture: a few MB), every
	// pass reads the forward pass's values instead of recomputing them m
	// times; above it (the full MTAN: hundreds of MB), they are
	// recomputed.
	rematMinBytes int64
	// concurrentPassMaxBytes: the backward passes of one Evaluate run
	// concurrently (up to GOMAXPROCS of them) when, besides one pass's
	// values, the others' take at most this many bytes; otherwise one
	// after another, each using every core inside its ops. Negative:
	// never concurrently. A model of many small ops (the small MTAN
	// fixture: a thousand ops of tens of microseconds) keeps two cores
	// busy only part of each op; its passes side by side keep them busy
	// throughout. A large model's ops use every core already, and
	// concurrent passes would hold m passes' values.
	concurrentPassMaxBytes int64
}

// defaultExec is the executor's options with every fast path on.
func defaultExec() execOptions {
	return execOptions{sumInPlace: true, copyInPlace: true, skipZeroSums: true, poolInts: true, reuseTensors: true,
		fuseBatchNormRelu: true, gradsIntoJacobian: true, rematMinBytes: 64 << 20, concurrentPassMaxBytes: 64 << 20}
}

// execStats counts, for tests, what the programs of one Model did: that
// a fast path ran at all.
type execStats struct {
	inPlaceSums        atomic.Int64 // gradient sums written over an operand
	copiesTaken        atomic.Int64 // plain copies that took over their operand's buffer
	zeroSums           atomic.Int64 // gradient sums that took their nonzero operand
	sunkGrads          atomic.Int64 // values written into their place in the Jacobian
	sinkTensorsOffered atomic.Int64 // values written into a Jacobian row by ops offered its last tensor
	sinkTensorsReused  atomic.Int64 // ... that returned it
	reusedTensors      atomic.Int64 // tensors an op was offered and returned as its value
	opsTensorsReused   atomic.Int64 // ... of them, made by the kernels package's ops (takeReuse)
	pooledInts         atomic.Int64 // int64 values of the kernels package's ops in pool buffers
	pooledIntKernels   atomic.Int64 // int64 values of integer kernels in pool buffers
	fusedGradRuns      atomic.Int64 // fused Relu gradients run
	boundParamsKept    atomic.Int64 // parameters bindParam left bound
}
