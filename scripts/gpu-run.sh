#!/usr/bin/env bash
#===- scripts/gpu-run.sh - run every GPU test and benchmark ---------------===#
#
# Runs on the GPU machine from the repository root after
# scripts/pack-gpu.sh: every packed test executable, then te-opt on the
# examples; logs go to $OUT (or /tmp/te-gpu), a short table is printed last.
#
#===------------------------------------------------------------------------===#
set -uo pipefail
PACK=.device-pack
LOG="${OUT:-/tmp/te-gpu}"
mkdir -p "$LOG"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader \
  | tee "$LOG/device.txt"
# The CUTLASS/CuTe headers generated GEMMs compile against (packed by
# scripts/pack-gpu.sh).
if [[ -f "$PACK/cutlass.tar.xz" ]]; then
  mkdir -p "${TMPDIR:-/tmp}/tejit-deps"
  tar -C "${TMPDIR:-/tmp}/tejit-deps" -xJf "$PACK/cutlass.tar.xz"
  export TE_CUTLASS_DIR=$(ls -d "${TMPDIR:-/tmp}"/tejit-deps/cutlass-*/include | tail -1)
fi
# NCCL for the distributed tests and te-run --ranks: the toolkit's or the
# system's, else the nvidia-nccl wheel that torch brings.
if [[ -z "${TE_NCCL_LIBRARY:-}" && ! -f /usr/local/cuda/lib64/libnccl.so.2 ]] &&
   ! ldconfig -p 2>/dev/null | grep -q 'libnccl.so.2 '; then
  lib=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib", "libnccl.so.2"))' 2>/dev/null)
  [[ -f "$lib" ]] && export TE_NCCL_LIBRARY="$lib"
fi
GPUS=$(nvidia-smi -L 2>/dev/null | wc -l)
declare -a rows
run() { # name, command...
  local name=$1; shift
  local start=$(date +%s%N)
  "$@" > "$LOG/$name.log" 2>&1
  local rc=$?
  local ms=$(( ($(date +%s%N) - start) / 1000000 ))
  local summary=$(grep -E "PASSED|FAILED|passed|failed|SKIPPED" "$LOG/$name.log" | tail -1)
  rows+=("$(printf '%-28s rc=%-3s %7d ms  %s' "$name" "$rc" "$ms" "$summary")")
}
for t in "$PACK"/tests/*; do
  run "$(basename "$t")" "$t"
done
for f in examples/*.mlir; do
  run "te-opt-$(basename "$f" .mlir)" "$PACK/bin/te-opt" "$f" --te-resolve-recipe --te-infer-usage --te-fuse-quantize --canonicalize --cse
done
run "te-opt-invalid" sh -c "! $PACK/bin/te-opt test/Dialect/malformed.mlir -split-input-file"
run "te-run-check-hybrid" "$PACK/bin/te-run" examples/quantize_hybrid.mlir --random-inputs 5 --check
for f in deepseek_linear delayed_fp8_linear hybrid_linear adamw_mxfp8; do
  run "te-run-check-$f" "$PACK/bin/te-run" "examples/$f.mlir" --random-inputs 7 --check
done
# The MoE experts: quantize + the generated grouped GEMM, ragged splits.
run "te-run-check-moe" "$PACK/bin/te-run" examples/moe_block_fp8.mlir --random-inputs 7 --check --entry up,down,up_grad
run "te-run-check-moe-dgrad" "$PACK/bin/te-run" test/Passes/grouped-gemm-dgrad.mlir --random-inputs 7 --check
run "te-run-check-double-quantize" "$PACK/bin/te-run" test/Tools/te-run-double-quantize.mlir --random-inputs 2 --check --entry both
run "te-run-check-moe-bias" "$PACK/bin/te-run" test/Tools/te-run-grouped-linear.mlir --random-inputs 7 --check --entry bf16_bias,fp8_bias,mxfp8_bias,current_bias,nvfp4_bias,bf16_grad,hybrid_grad,current_grad,mxfp8_grad,nvfp4_grad,mxfp8_nvfp4_grad,current_chain,nvfp4_chain,current_chain_grad,block_chain,delayed_chain,delayed_chain_grad
# GEMMs pairing two scheme families (dequantized, then the bf16 GEMM).
run "te-run-check-mixed-families" "$PACK/bin/te-run" test/Tools/te-run-mixed-families.mlir --random-inputs 7 --check --entry mxfp8_nvfp4,block_mxfp8,current_nvfp4,hybrid_block,grouped_mxfp8_block,grouped_mxfp8_block_grad,grouped_block_mxfp8_grad,grouped_current_mxfp8,grouped_delayed_block,grouped_nvfp4_mxfp8_grad
# Sessions: persistent values across alternating train / optimizer / eval calls.
run "te-run-session-mxfp8" "$PACK/bin/te-run" examples/train_loop_mxfp8.mlir --random-inputs 1 --check \
  --entry init,train_step,optimizer_step,eval_step,train_step,optimizer_step,eval_step,train_step
run "te-run-session-block" "$PACK/bin/te-run" test/Tools/te-run-session.mlir --random-inputs 3 --check \
  --entry init,train_step,eval_step,train_step,optimizer_step,eval_step,train_step,optimizer_step,train_step
run "te-run-session-copy" "$PACK/bin/te-run" test/Tools/te-run-session.mlir --random-inputs 3 --check \
  --entry init,snap_master,snap_master,init,eval_step
run "te-run-session-qweight" "$PACK/bin/te-run" examples/quantized_weight_adamw.mlir --random-inputs 1 --check \
  --entry init,train_step,optimizer_step,train_step,optimizer_step,train_step
# Delayed scaling: the states evolve over the steps, compared every step.
run "te-run-check-delayed-loop" "$PACK/bin/te-run" examples/delayed_scaling_loop.mlir --random-inputs 1 --check --steps 8
run "te-run-check-delayed-states" sh -c "for e in hybrid options moe_train; do $PACK/bin/te-run test/Tools/te-run-delayed-scaling.mlir --entry \$e --random-inputs 2 --check --steps 6 || exit 1; done"
# A layer switching NVFP4 -> MXFP8 mid-training, the weight re-quantized.
# A distributed optimizer step: AdamW on four master shards, the weight quantized from them.
run "te-run-check-sharded-master" "$PACK/bin/te-run" examples/sharded_master_update.mlir --random-inputs 1 --check --steps 3
run "te-run-check-sharded-delayed" "$PACK/bin/te-run" test/Tools/te-run-quantize-shards.mlir --random-inputs 2 --check --steps 4
run "te-run-check-recipe-switch" "$PACK/bin/te-run" examples/recipe_switch.mlir --random-inputs 1 --check \
  --entry init,train_step,optimizer_step,train_step,optimizer_step,train_step --switch-recipe 4:fc1=mxfp8
# Two ranks (processes) gather quantized weight shards over NCCL.
if (( GPUS >= 2 )); then
  run "te-run-check-all-gather" "$PACK/bin/te-run" test/Tools/te-run-all-gather.mlir --ranks 2 --check \
    --random-inputs 3 --entry forward,backward
  run "te-run-check-fsdp" "$PACK/bin/te-run" examples/fsdp_block_fp8.mlir --ranks 2 --check \
    --random-inputs 1 --entry forward,backward
  # A master split between two processes, quantized with NCCL reductions.
  run "te-run-check-rank-shards" "$PACK/bin/te-run" test/Tools/te-run-quantize-rank-shards.mlir --ranks 2 \
    --check --random-inputs 4
  run "te-run-check-sharded-ranks" "$PACK/bin/te-run" examples/sharded_master_ranks.mlir --ranks 2 --check \
    --random-inputs 1 --steps 3
fi
# The Python package, built here against this machine's Python and the
# packed libtejit.so (no MLIR needed), then its tests on the GPU.
PYBUILD="${TMPDIR:-/tmp}/tejit-python"
if [[ -d "$PACK/tejit" && -d "$PACK/nanobind" ]]; then
  run "python-build" cmake -S python -B "$PYBUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_PREFIX_PATH="$PWD/$PACK/tejit" -Dnanobind_DIR="$PWD/$PACK/nanobind/cmake" \
    -DPython_EXECUTABLE="$(command -v python3)"
  run "python-build-ninja" cmake --build "$PYBUILD"
  run "pytest" env PYTHONPATH="$PYBUILD/python" TEJIT_TE_RUN="$PWD/$PACK/bin/te-run" \
    python3 -m pytest -v -p no:cacheprovider python/tests
fi
# TE_GPU_BENCH: 1 every benchmark, linear / adam / python / gemm / recipes /
# ranks one of them, 0 none.
if [[ "${TE_GPU_BENCH:-1}" == 1 || "${TE_GPU_BENCH:-1}" == adam ]]; then
  python3 bench/gen_adam.py 128 8192 1024 > "$LOG/adam_1b.mlir"
  run "adam-bench" "$PACK/bin/te-run" "$LOG/adam_1b.mlir" --random-inputs 1 --bench 10 --backend cuda
  run "adam_torch.py" python3 bench/adam_torch.py 128 8192 1024 10
fi
run "adam_vs_torch.py" python3 bench/adam_vs_torch.py "$PACK/bin/te-run" 10
if [[ "${TE_GPU_BENCH:-1}" == 1 || "${TE_GPU_BENCH:-1}" == linear ]]; then
  run "linear-bench" "$PACK/bin/te-run" bench/linear_block_fp8_8192.mlir --random-inputs 1 --bench 20 --backend cuda
  run "linear_torch.py" python3 bench/linear_torch.py 8192 20
fi
if [[ "${TE_GPU_BENCH:-1}" == 1 || "${TE_GPU_BENCH:-1}" == recipes ]]; then
  run "recipes-bench" sh -c "for e in bf16 fp8_block mxfp8 nvfp4 hybrid mixed; do echo \$e; $PACK/bin/te-run bench/linear_recipes_8192.mlir --entry \$e --random-inputs 1 --bench 20 | grep -E 'bench|copy'; done"
  run "double-quantize-bench" sh -c "for e in plain_mxfp8_mxfp8 doubled_mxfp8_mxfp8 plain_nvfp4_mxfp8 doubled_nvfp4_mxfp8 plain_mxfp8_nvfp4 doubled_mxfp8_nvfp4; do echo \$e; $PACK/bin/te-run bench/double_quantize_16384x8192.mlir --entry \$e --random-inputs 1 --bench 20 | grep -E 'bench|copy'; done"
  run "dequantize-bench" sh -c "$PACK/bin/te-run bench/dequantize_8192.mlir --random-inputs 1 --bench 20 | grep -E 'bench|copy'"
fi
if [[ "${TE_GPU_BENCH:-1}" == 1 || "${TE_GPU_BENCH:-1}" == python ]]; then
  [[ -f "$PYBUILD/python/tejit/__init__.py" ]] && {
    run "python_overhead.py" env PYTHONPATH="$PYBUILD/python" python3 bench/python_overhead.py "$PACK/bin/te-api-overhead" 2000 15
    run "linear_vs_torch.py" env PYTHONPATH="$PYBUILD/python" python3 bench/linear_vs_torch.py 8192 20
  }
fi
if [[ "${TE_GPU_BENCH:-1}" == 1 || "${TE_GPU_BENCH:-1}" == gemm ]]; then
  run "grouped-gemm-bench" "$PACK/bin/te-grouped-gemm-bench" 20 --mxfp8
  run "moe-bench" sh -c "for e in up up_grad mlp; do $PACK/bin/te-run bench/moe_block_fp8_32768.mlir --entry \$e --random-inputs 1 --bench 20 | grep -E 'bench|copy'; done; for e in mxfp8_fprop mxfp8_grad bf16_grad; do $PACK/bin/te-run bench/moe_mxfp8_32768.mlir --entry \$e --random-inputs 1 --bench 20 | grep -E 'bench|copy'; done; $PACK/bin/te-run bench/moe_mxfp8_fprop_8192.mlir --random-inputs 1 --bench 20 | grep -E 'bench|copy'; for o in direct dequantize; do $PACK/bin/te-run bench/moe_nvfp4_fprop_8192.mlir --random-inputs 1 --bench 20 --grouped-nvfp4=\$o | grep -E 'bench|copy'; done; for e in current block current_grad block_grad nvfp4 bf16 nvfp4_grad bf16_grad current_step delayed_step mlp mlp_grad; do $PACK/bin/te-run bench/moe_fp8_current_32768.mlir --entry \$e --random-inputs 1 --bench 20 | grep -E 'bench|copy'; done"
  run "grouped_gemm_torch.py" python3 bench/grouped_gemm_torch.py 20
fi
if [[ "${TE_GPU_BENCH:-1}" == 1 || "${TE_GPU_BENCH:-1}" == ranks ]] && (( GPUS >= 2 )); then
  python3 bench/gen_all_gather.py > "$LOG/all_gather_1b.mlir"
  run "all-gather-bench" sh -c "for e in bf16 mxfp8_forward mxfp8_backward block_forward block_both block_both_sent nvfp4_forward; do echo \$e; $PACK/bin/te-run $LOG/all_gather_1b.mlir --ranks 2 --entry \$e --random-inputs 1 --bench 20 | grep -E '== rank|all-gather|bench entry|te_quantize_0 '; done"
fi
if [[ "${TE_GPU_BENCH:-1}" == 1 ]]; then
  run "te-rt-bench" "$PACK/bin/te-rt-bench"
  run "gemm_torch.py" python3 bench/gemm_torch.py
  run "quantize-bench" sh -c "for e in mxfp8 fp8_block_1x128 fp8_block_128x128 nvfp4 fp8_current; do echo \$e; $PACK/bin/te-run bench/quantize_16384x8192.mlir --entry \$e --random-inputs 3 --bench 30 | grep -E 'bench|copy'; done; for e in mxfp8_both block_128x128_rowwise block_1x128_both current_rowwise nvfp4_rowwise; do echo f32 \$e; $PACK/bin/te-run bench/quantize_f32_8192.mlir --entry \$e --random-inputs 1 --bench 20 | grep -E 'bench|copy'; done"
  run "quantize_torch.py" python3 bench/quantize_torch.py 16384 8192 30
fi
for b in te-run-check-delayed-loop te-run-check-delayed-states te-run-check-recipe-switch all-gather-bench te-run-check-all-gather te-run-check-fsdp recipes-bench double-quantize-bench dequantize-bench grouped-gemm-bench moe-bench grouped_gemm_torch.py pytest python_overhead.py linear_vs_torch.py te-rt-bench gemm_torch.py quantize-bench quantize_torch.py linear-bench linear_torch.py adam-bench adam_torch.py adam_vs_torch.py te-run-session-mxfp8 te-run-session-block te-run-session-copy te-run-session-qweight te-run-check-adamw_mxfp8 te-run-check-deepseek_linear te-run-check-delayed_fp8_linear te-run-check-hybrid_linear; do
  [[ -f "$LOG/$b.log" ]] && { echo "== $b"; cat "$LOG/$b.log"; }
done
echo
echo "== summary ($(head -1 "$LOG/device.txt"))"
printf '%s\n' "${rows[@]}"
