// Runs one ONNX model in ONNX Runtime (npm's onnxruntime-node, CPU) for qgrad's deploy tests:
//   node run_onnx.js ORT_DIR model.onnx input.f32 N,C,H,W output.f32
// ORT_DIR holds node_modules/onnxruntime-node (tests/deploy/ort/install_ort.sh installs it). The
// input and output are raw little-endian float32; prints the output's dims.
'use strict';
const fs = require('fs');
const path = require('path');

async function main() {
  const [ortDir, model, input, shape, output] = process.argv.slice(2);
  if (!output) throw new Error('usage: node run_onnx.js ORT_DIR model.onnx input.f32 N,C,H,W output.f32');
  const ort = require(path.resolve(ortDir, 'node_modules', 'onnxruntime-node'));
  const bytes = fs.readFileSync(input);
  const data = new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength));
  const session = await ort.InferenceSession.create(model, {intraOpNumThreads: 1});
  const feeds = {[session.inputNames[0]]: new ort.Tensor('float32', data, shape.split(',').map(Number))};
  const result = (await session.run(feeds))[session.outputNames[0]];
  fs.writeFileSync(output, Buffer.from(result.data.buffer, result.data.byteOffset, result.data.byteLength));
  console.log(result.dims.join(','));
}

main().catch((e) => {
  console.error('run_onnx.js: ' + (e && e.message ? e.message : e));
  process.exit(1);
});
