// Runs an ONNX model over many inputs in ONNX Runtime (npm's onnxruntime-node, CPU) for qgrad
// verify-deploy and bench/bench_deploy.py, batch by batch in one session:
//   node run_onnx_batches.js ORT_DIR model.onnx input.f32 N,C,H,W BATCH THREADS output.f32 [PASSES]
//        [OPTIMIZATION]
// ORT_DIR holds node_modules/onnxruntime-node. input.f32 is raw little-endian float32 [N,C,H,W];
// output.f32 receives the outputs of the last pass, rows in input order (written to a temporary
// name and renamed). One untimed warm-up batch runs first, then PASSES (default 1) timed passes
// over all N inputs, timing session.run only. OPTIMIZATION is ONNX Runtime's
// graphOptimizationLevel: "all" (the default; it fuses Q/DQ patterns into integer kernels) or
// "disabled" (the graph as exported). Prints one JSON line: the output dims, the seconds
// of each pass, the peak resident set size of this node process (KiB) and the runtime version.
'use strict';
const fs = require('fs');
const path = require('path');

function usage() {
  return 'usage: node run_onnx_batches.js ORT_DIR model.onnx input.f32 N,C,H,W BATCH THREADS ' +
         'output.f32 [PASSES] [all|disabled]';
}

function positiveInt(name, text) {
  const v = Number(text);
  if (!Number.isInteger(v) || v < 1) throw new Error(`${name} must be a positive integer, got '${text}'`);
  return v;
}

async function main() {
  const args = process.argv.slice(2);
  if (args.length < 7 || args.length > 9) throw new Error(usage());
  const [ortDir, model, input, shapeText, batchText, threadsText, output] = args;
  const shape = shapeText.split(',').map((d) => positiveInt('N,C,H,W', d));
  const batch = positiveInt('BATCH', batchText);
  const threads = positiveInt('THREADS', threadsText);
  const passes = args.length >= 8 ? positiveInt('PASSES', args[7]) : 1;
  const optimization = args.length === 9 ? args[8] : 'all';
  if (optimization !== 'all' && optimization !== 'disabled')
    throw new Error(`OPTIMIZATION must be all or disabled, got '${optimization}'`);
  const pkg = path.resolve(ortDir, 'node_modules', 'onnxruntime-node');
  const ort = require(pkg);
  const version = JSON.parse(fs.readFileSync(path.join(pkg, 'package.json'), 'utf8')).version;
  const bytes = fs.readFileSync(input);
  const n = shape[0];
  const per = shape.slice(1).reduce((a, b) => a * b, 1);
  if (bytes.byteLength !== n * per * 4)
    throw new Error(`${input} holds ${bytes.byteLength} bytes, expected ${n * per * 4} for ${shapeText} float32`);
  const data = new Float32Array(bytes.buffer, bytes.byteOffset, n * per);
  const session = await ort.InferenceSession.create(model, {
    intraOpNumThreads: threads, interOpNumThreads: 1, executionMode: 'sequential',
    graphOptimizationLevel: optimization});
  const inName = session.inputNames[0], outName = session.outputNames[0];
  const runBatch = async (start) => {
    const rows = Math.min(batch, n - start);
    const x = new ort.Tensor('float32', data.subarray(start * per, (start + rows) * per), [rows, ...shape.slice(1)]);
    return (await session.run({[inName]: x}))[outName];
  };
  await runBatch(0);  // warm-up: first-run allocations and kernel selection, untimed
  const seconds = [];
  let out = null, outDims = null, outPer = 0;
  for (let p = 0; p < passes; ++p) {
    let total = 0n;
    for (let start = 0; start < n; start += batch) {
      const t0 = process.hrtime.bigint();
      const y = await runBatch(start);
      total += process.hrtime.bigint() - t0;
      if (out === null) {
        outPer = y.data.length / y.dims[0];
        out = new Float32Array(n * outPer);
        outDims = [n, ...y.dims.slice(1)];
      }
      out.set(y.data, start * outPer);
    }
    seconds.push(Number(total) / 1e9);
  }
  const tmp = `${output}.tmp${process.pid}`;
  fs.writeFileSync(tmp, Buffer.from(out.buffer, out.byteOffset, out.byteLength));
  fs.renameSync(tmp, output);
  console.log(JSON.stringify({dims: outDims, seconds, max_rss_kib: process.resourceUsage().maxRSS, version}));
}

main().catch((e) => {
  console.error('run_onnx_batches.js: ' + (e && e.message ? e.message : e));
  process.exit(1);
});
