// runner.js: runs one ONNX model in ONNX Runtime (node binding, CPU) for
// paretonav's internal/testkit/ortcheck package. It is embedded in the Go package
// and written to a temporary folder at each call.
//
// Usage: node runner.js ORT_NODE_MODULES JOB_DIR
//
// JOB_DIR/job.json: {"model": PATH, "optLevel": "disabled"|"basic"|...,
//   "inputs": [{"name", "type", "shape", "file"}]}; each file holds the raw
// little-endian values. The runner writes JOB_DIR/out_<i>.bin for every
// output and JOB_DIR/result.json: {"outputs": [{"name", "type", "shape",
// "file"}]}. On failure it prints "ortcheck: <message>" on stderr and exits 1.
'use strict';
const fs = require('fs');
const path = require('path');

function fail(msg) {
  process.stderr.write('ortcheck: ' + msg + '\n');
  process.exit(1);
}

const ctors = {
  float32: Float32Array, float64: Float64Array, int64: BigInt64Array,
  int32: Int32Array, int16: Int16Array, int8: Int8Array, uint8: Uint8Array,
  uint16: Uint16Array, uint32: Uint32Array, uint64: BigUint64Array, bool: Uint8Array,
  float16: Uint16Array,
};

async function main() {
  const [ortDir, jobDir] = process.argv.slice(2);
  let ort;
  try {
    ort = require(path.join(ortDir, 'onnxruntime-node'));
  } catch (e) {
    fail('cannot load onnxruntime-node from ' + ortDir + ': ' + e.message);
  }
  const job = JSON.parse(fs.readFileSync(path.join(jobDir, 'job.json'), 'utf8'));
  const feeds = {};
  for (const inp of job.inputs) {
    const C = ctors[inp.type];
    if (!C) fail('input ' + inp.name + ': unsupported type ' + inp.type);
    const buf = fs.readFileSync(path.join(jobDir, inp.file));
    // Copy into a fresh, aligned ArrayBuffer.
    const ab = new ArrayBuffer(buf.length);
    new Uint8Array(ab).set(buf);
    feeds[inp.name] = new ort.Tensor(inp.type, new C(ab), inp.shape);
  }
  let session;
  try {
    session = await ort.InferenceSession.create(job.model, {
      executionProviders: ['cpu'],
      graphOptimizationLevel: job.optLevel || 'disabled',
      intraOpNumThreads: job.threads || 1,
      interOpNumThreads: 1,
      logSeverityLevel: 3,
    });
  } catch (e) {
    fail('loading ' + job.model + ': ' + e.message);
  }
  let results;
  try {
    results = await session.run(feeds);
  } catch (e) {
    fail('running ' + job.model + ': ' + e.message);
  }
  const outputs = [];
  session.outputNames.forEach((name, i) => {
    const t = results[name];
    if (!t) return;
    if (t.type === 'string') fail('output ' + name + ': string tensors are not supported');
    const d = t.data;
    const file = 'out_' + i + '.bin';
    fs.writeFileSync(path.join(jobDir, file), Buffer.from(d.buffer, d.byteOffset, d.byteLength));
    outputs.push({ name, type: t.type, shape: Array.from(t.dims), file });
  });
  fs.writeFileSync(path.join(jobDir, 'result.json'), JSON.stringify({ outputs }));
}

main().catch((e) => fail(e && e.stack ? e.stack : String(e)));
