// RUN: te-opt %s -split-input-file -verify-diagnostics

// Tests every rule of te.quantize_shards (tek.quantize_shards_kernel checks
// the same types): shard shapes, element types and sizes, and the schemes
// a sharded master cannot be quantized in.

func.func @two_d_shard(%a: tensor<64x64xf32>, %b: tensor<4096xf32>) {
  // expected-error @+1 {{'te.quantize_shards' op shard 0 is 'tensor<64x64xf32>': master shards are 1-D pieces of the flattened tensor}}
  %w = te.quantize_shards %a, %b : tensor<64x64xf32>, tensor<4096xf32> -> !te.qtensor<128x64xf32, #te.mxfp8<e4m3>, rowwise>
  return
}

// -----

func.func @element_type(%a: tensor<4096xf32>, %b: tensor<4096xbf16>) {
  // expected-error @+1 {{'te.quantize_shards' op shard 1 holds 'bf16', but the quantized tensor's source type is 'f32'}}
  %w = te.quantize_shards %a, %b : tensor<4096xf32>, tensor<4096xbf16> -> !te.qtensor<128x64xf32, #te.mxfp8<e4m3>, rowwise>
  return
}

// -----

func.func @too_few(%a: tensor<4096xf32>, %b: tensor<4095xf32>) {
  // expected-error @+1 {{'te.quantize_shards' op cannot split 128x64 into shards of 4096x4095: the shards hold 8191 of the tensor's 8192 elements}}
  %w = te.quantize_shards %a, %b : tensor<4096xf32>, tensor<4095xf32> -> !te.qtensor<128x64xf32, #te.mxfp8<e4m3>, rowwise>
  return
}

// -----

func.func @too_many(%a: tensor<4096xf32>, %b: tensor<4097xf32>) {
  // expected-error @+1 {{'te.quantize_shards' op cannot split 128x64 into shards of 4096x4097: the shards hold more than the tensor's 8192 elements}}
  %w = te.quantize_shards %a, %b : tensor<4096xf32>, tensor<4097xf32> -> !te.qtensor<128x64xf32, #te.mxfp8<e4m3>, rowwise>
  return
}

// -----

func.func @empty_shard(%a: tensor<8192xf32>, %b: tensor<0xf32>) {
  // expected-error @+1 {{'te.quantize_shards' op cannot split 128x64 into shards of 8192x0: shard 1 is empty}}
  %w = te.quantize_shards %a, %b : tensor<8192xf32>, tensor<0xf32> -> !te.qtensor<128x64xf32, #te.mxfp8<e4m3>, rowwise>
  return
}

// -----

func.func @no_shard() {
  // expected-error @+1 {{'te.quantize_shards' op needs at least one shard}}
  %w = "te.quantize_shards"() : () -> !te.qtensor<128x64xf32, #te.mxfp8<e4m3>, rowwise>
  return
}

// -----

func.func @delayed_without_state(%a: tensor<4096xf32>, %b: tensor<4096xf32>) {
  // expected-error @+1 {{'te.quantize_shards' op quantizes by #te.fp8_delayed<e4m3, history = 16, algo = max, margin = 0>, whose scale comes from an amax history kept between calls: name that state (scaling_state = "...")}}
  %w = te.quantize_shards %a, %b : tensor<4096xf32>, tensor<4096xf32> -> !te.qtensor<128x64xf32, #te.fp8_delayed<e4m3, history = 16>, rowwise>
  return
}

// -----

func.func @hadamard(%a: tensor<4096xf32>, %b: tensor<4096xf32>) {
  // expected-error @+1 {{'te.quantize_shards' op cannot quantize the columnwise direction from master shards: nvfp4's Hadamard transform mixes 16 rows of a column, which different ranks may hold}}
  %w = te.quantize_shards %a, %b : tensor<4096xf32>, tensor<4096xf32> -> !te.qtensor<128x64xf32, #te.nvfp4<rht>, rowwise|columnwise>
  return
}

// -----

func.func @double_quantized(%a: tensor<4096xf32>, %b: tensor<4096xf32>) {
  // expected-error @+1 {{'te.quantize_shards' op cannot double-quantize a sharded master: the columnwise copy would need the rowwise one of other ranks' elements}}
  %w = te.quantize_shards %a, %b : tensor<4096xf32>, tensor<4096xf32> -> !te.qtensor<128x64xf32, #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.mxfp8<e4m3>, columnwise_source = rowwise_dequantized>, rowwise|columnwise>
  return
}

// -----

func.func @kernel_needs_qtensor(%a: tensor<4096xf32>, %b: tensor<4096xf32>) {
  // expected-error @+1 {{'tek.quantize_shards_kernel' op quantizes at least one shard into a !te.qtensor}}
  %w = tek.quantize_shards_kernel "te_quantize_shards_0" %a, %b {stages = []} : tensor<4096xf32>, tensor<4096xf32> -> tensor<128x64xf32>
  return
}

// -----

func.func @kernel_stages(%a: tensor<4096xf32>, %b: tensor<4096xf32>) {
  // expected-error @+1 {{'tek.quantize_shards_kernel' op needs one stage per direction the result holds}}
  %w = tek.quantize_shards_kernel "te_quantize_shards_0" %a, %b {stages = [#tek.stage<0, rowwise>]} : tensor<4096xf32>, tensor<4096xf32> -> !te.qtensor<128x64xf32, #te.nvfp4<>, rowwise|columnwise>
  return
}

// -----

func.func @kernel_sizes(%a: tensor<4096xf32>, %b: tensor<4000xf32>) {
  // expected-error @+1 {{'tek.quantize_shards_kernel' op cannot split 128x64 into shards of 4096x4000: the shards hold 8096 of the tensor's 8192 elements}}
  %w = tek.quantize_shards_kernel "te_quantize_shards_0" %a, %b {stages = [#tek.stage<0, rowwise>]} : tensor<4096xf32>, tensor<4000xf32> -> !te.qtensor<128x64xf32, #te.nvfp4<>, rowwise>
  return
}

// -----

// One process per rank (rank_offsets): the operand is this rank's shard.
func.func @rank_offsets_two_shards(%a: tensor<4096xf32>, %b: tensor<4096xf32>) {
  // expected-error @+1 {{'te.quantize_shards' op takes one shard per process with rank_offsets, got 2}}
  %w = te.quantize_shards %a, %b {rank_offsets = array<i64: 0, 4096, 8192>} : tensor<4096xf32>, tensor<4096xf32> -> !te.qtensor<128x64xf32, #te.mxfp8<e4m3>, rowwise>
  return
}

// -----

func.func @rank_offsets_one_rank(%a: tensor<8192xf32>) {
  // expected-error @+1 {{'te.quantize_shards' op cannot split 128x64 at rank offsets [0, 8192]: needs the offsets of at least two ranks (R + 1 values)}}
  %w = te.quantize_shards %a {rank_offsets = array<i64: 0, 8192>} : tensor<8192xf32> -> !te.qtensor<128x64xf32, #te.mxfp8<e4m3>, rowwise>
  return
}

// -----

func.func @rank_offsets_first(%a: tensor<8192xf32>) {
  // expected-error @+1 {{'te.quantize_shards' op cannot split 128x64 at rank offsets [1, 4096, 8192]: the first offset must be 0}}
  %w = te.quantize_shards %a {rank_offsets = array<i64: 1, 4096, 8192>} : tensor<8192xf32> -> !te.qtensor<128x64xf32, #te.mxfp8<e4m3>, rowwise>
  return
}

// -----

func.func @rank_offsets_last(%a: tensor<8192xf32>) {
  // expected-error @+1 {{'te.quantize_shards' op cannot split 128x64 at rank offsets [0, 4096, 8191]: the last offset must be the tensor's 8192 elements}}
  %w = te.quantize_shards %a {rank_offsets = array<i64: 0, 4096, 8191>} : tensor<8192xf32> -> !te.qtensor<128x64xf32, #te.mxfp8<e4m3>, rowwise>
  return
}

// -----

func.func @rank_offsets_empty_rank(%a: tensor<8192xf32>) {
  // expected-error @+1 {{'te.quantize_shards' op cannot split 128x64 at rank offsets [0, 4096, 4096, 8192]: rank 1's shard is empty}}
  %w = te.quantize_shards %a {rank_offsets = array<i64: 0, 4096, 4096, 8192>} : tensor<8192xf32> -> !te.qtensor<128x64xf32, #te.mxfp8<e4m3>, rowwise>
  return
}

// -----

func.func @rank_offsets_capacity(%a: tensor<4096xf32>) {
  // expected-error @+1 {{'te.quantize_shards' op cannot split 128x64 at rank offsets [0, 3000, 8192]: rank 1 holds 5192 elements, more than the shard's 4096}}
  %w = te.quantize_shards %a {rank_offsets = array<i64: 0, 3000, 8192>} : tensor<4096xf32> -> !te.qtensor<128x64xf32, #te.mxfp8<e4m3>, rowwise>
  return
}
