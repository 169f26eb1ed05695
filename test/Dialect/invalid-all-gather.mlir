// RUN: te-opt %s -split-input-file -verify-diagnostics

// Tests every rule of te.all_gather (tek.all_gather checks the same types)
// and of te.quantize's amax_ranks: shapes, element types, schemes, the
// directions gathered, shard boundaries, and the shared tensor amax.

func.func @rows_not_multiplied(%x: tensor<128x64xbf16>) {
  // expected-error @+1 {{'te.all_gather' op result shape 128x64 must be the shard's 128x64 with its first dimension times 2 ranks}}
  %g = te.all_gather %x {ranks = 2} : tensor<128x64xbf16> -> tensor<128x64xbf16>
  return
}

// -----

func.func @element_type(%x: tensor<128x64xbf16>) {
  // expected-error @+1 {{'te.all_gather' op result element type differs from the shard's}}
  %g = te.all_gather %x {ranks = 2} : tensor<128x64xbf16> -> tensor<256x64xf32>
  return
}

// -----

func.func @quantized_into_tensor(%q: !te.qtensor<128x64xbf16, #te.mxfp8<e4m3>, rowwise>) {
  // expected-error @+1 {{both or neither must be quantized}}
  %g = te.all_gather %q {ranks = 2} : !te.qtensor<128x64xbf16, #te.mxfp8<e4m3>, rowwise> -> tensor<256x64xbf16>
  return
}

// -----

func.func @scheme_differs(%q: !te.qtensor<128x64xbf16, #te.mxfp8<e4m3>, rowwise>) {
  // expected-error @+1 {{must have the shard's element type and scheme #te.mxfp8<e4m3>}}
  %g = te.all_gather %q {ranks = 2} : !te.qtensor<128x64xbf16, #te.mxfp8<e4m3>, rowwise> -> !te.qtensor<256x64xbf16, #te.mxfp8<e5m2>, rowwise>
  return
}

// -----

func.func @direction_not_held(%q: !te.qtensor<128x64xbf16, #te.mxfp8<e4m3>, rowwise>) {
  // expected-error @+1 {{gathers the columnwise direction, which the shard does not hold}}
  %g = te.all_gather %q {ranks = 2} : !te.qtensor<128x64xbf16, #te.mxfp8<e4m3>, rowwise> -> !te.qtensor<256x64xbf16, #te.mxfp8<e4m3>, columnwise>
  return
}

// -----

func.func @block_split_between_ranks(%q: !te.qtensor<64x128xbf16, #te.fp8_block<e4m3, 1x128>, columnwise>) {
  // expected-error @+1 {{cannot gather the columnwise direction: fp8_block columnwise scaling blocks span 128 rows: a shard of 64 rows would split one between ranks}}
  %g = te.all_gather %q {ranks = 2} : !te.qtensor<64x128xbf16, #te.fp8_block<e4m3, 1x128>, columnwise> -> !te.qtensor<128x128xbf16, #te.fp8_block<e4m3, 1x128>, columnwise>
  return
}

// -----

func.func @tile_split_between_ranks(%q: !te.qtensor<64x128xbf16, #te.fp8_block<e4m3, 128x128>, rowwise>) {
  // expected-error @+1 {{fp8_block rowwise scaling blocks span 128 rows: a shard of 64 rows would split one between ranks}}
  %g = te.all_gather %q {ranks = 4} : !te.qtensor<64x128xbf16, #te.fp8_block<e4m3, 128x128>, rowwise> -> !te.qtensor<256x128xbf16, #te.fp8_block<e4m3, 128x128>, rowwise>
  return
}

// -----

func.func @stochastic_rounding(%q: !te.qtensor<128x64xbf16, #te.nvfp4<sr>, rowwise>) {
  // expected-error @+1 {{nvfp4 stochastic rounding draws its random bits by element index}}
  %g = te.all_gather %q {ranks = 2} : !te.qtensor<128x64xbf16, #te.nvfp4<sr>, rowwise> -> !te.qtensor<256x64xbf16, #te.nvfp4<sr>, rowwise>
  return
}

// -----

func.func @tensor_amax_not_shared(%q: !te.qtensor<128x64xbf16, #te.fp8_current<e4m3>, rowwise>) {
  // expected-error @+1 {{gathers rowwise shards scaled by the tensor amax: they must come from te.quantize with amax_ranks = 2 so that every rank shares one scale}}
  %g = te.all_gather %q {ranks = 2} : !te.qtensor<128x64xbf16, #te.fp8_current<e4m3>, rowwise> -> !te.qtensor<256x64xbf16, #te.fp8_current<e4m3>, rowwise>
  return
}

// -----

func.func @amax_over_other_ranks(%x: tensor<128x64xbf16>) {
  %q = te.quantize %x {amax_ranks = 4} : tensor<128x64xbf16> -> !te.qtensor<128x64xbf16, #te.nvfp4<>, rowwise>
  // expected-error @+1 {{they must come from te.quantize with amax_ranks = 2}}
  %g = te.all_gather %q {ranks = 2} : !te.qtensor<128x64xbf16, #te.nvfp4<>, rowwise> -> !te.qtensor<256x64xbf16, #te.nvfp4<>, rowwise>
  return
}

// -----

func.func @quantize_shard_splits_block(%x: tensor<64x128xbf16>) {
  // expected-error @+1 {{'te.quantize' op quantizes a row shard (amax_ranks), but fp8_block rowwise scaling blocks span 128 rows: a shard of 64 rows would split one between ranks}}
  %q = te.quantize %x {amax_ranks = 2} : tensor<64x128xbf16> -> !te.qtensor<64x128xbf16, #te.fp8_block<e4m3, 128x128>, rowwise>
  return
}

// -----

func.func @one_rank_amax(%x: tensor<128x64xbf16>) {
  // expected-error @+1 {{attribute 'amax_ranks' failed to satisfy constraint}}
  %q = te.quantize %x {amax_ranks = 1} : tensor<128x64xbf16> -> !te.qtensor<128x64xbf16, #te.nvfp4<>, rowwise>
  return
}

// -----

func.func @zero_ranks(%x: tensor<128x64xbf16>) {
  // expected-error @+1 {{attribute 'ranks' failed to satisfy constraint}}
  %g = te.all_gather %x {ranks = 0} : tensor<128x64xbf16> -> tensor<0x64xbf16>
  return
}
