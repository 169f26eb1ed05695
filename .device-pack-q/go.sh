set -u
R=.device-pack-q/te-run
for e in mxfp8 fp8_block_1x128 fp8_block_128x128 nvfp4 fp8_current; do
  $R bench/quantize_16384x8192.mlir --entry $e --random-inputs 3 --bench 30 2>&1 | grep -E "bench|copy|error"
done
python3 bench/quantize_torch.py 16384 8192 30 2>&1 | tail -7
time $R examples/quantize_hybrid.mlir --random-inputs 5 --check --bench 30 2>&1 | tail -6
