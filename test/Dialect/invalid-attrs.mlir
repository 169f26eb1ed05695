// Scheme attribute and !te.qtensor diagnostics: bad options, shape rules of
// each scheme, nesting.
// RUN: te-opt %s -split-input-file -verify-diagnostics

// History 0 would leave no amax to scale from.
// expected-error @+1 {{invalid #te.fp8_delayed: history must be in [1, 65536] (the amax window holds at least the current step and is kept per tensor), got 0}}
func.func private @history_zero(!te.qtensor<16x16xbf16, #te.fp8_delayed<e4m3, history = 0>, rowwise>)

// -----

// The window is kept per quantized tensor: 2e9 steps would be 8 GB each.
// expected-error @+1 {{invalid #te.fp8_delayed: history must be in [1, 65536] (the amax window holds at least the current step and is kept per tensor), got 2000000000}}
func.func private @history_huge(!te.qtensor<16x16xbf16, #te.fp8_delayed<e4m3, history = 2000000000>, rowwise>)

// -----

// The largest history is accepted.
func.func private @history_max(!te.qtensor<16x16xbf16, #te.fp8_delayed<e4m3, history = 65536, margin = 32>, rowwise>)

// -----

// expected-error @+1 {{invalid #te.fp8_delayed: margin must be in [0, 32] (the scale is divided by 2^margin; beyond that even the amax quantizes to zero), got -1}}
func.func private @negative_margin(!te.qtensor<16x16xbf16, #te.fp8_delayed<e4m3, margin = -1>, rowwise>)

// -----

// expected-error @+1 {{invalid #te.fp8_delayed: margin must be in [0, 32] (the scale is divided by 2^margin; beyond that even the amax quantizes to zero), got 1000}}
func.func private @margin_huge(!te.qtensor<16x16xbf16, #te.fp8_delayed<e5m2, margin = 1000>, rowwise>)

// -----

// expected-error @+1 {{invalid #te.fp8_current: eps must be a finite value in [0, 1] (it bounds amax from below), got -1e-12}}
func.func private @negative_eps(!te.qtensor<16x16xbf16, #te.fp8_current<e4m3, eps = -1.0e-12>, rowwise>)

// -----

// An eps of 1e38 would floor every amax: the scale would be ~4e-36.
// expected-error @+1 {{invalid #te.fp8_current: eps must be a finite value in [0, 1] (it bounds amax from below), got 1e+38}}
func.func private @eps_huge(!te.qtensor<16x16xbf16, #te.fp8_current<e4m3, eps = 1.0e38>, rowwise>)

// -----

// eps is an FP32 value: 1e39 rounds to Inf.
// expected-error @+1 {{invalid #te.fp8_current: eps must be a finite value in [0, 1] (it bounds amax from below), got inf}}
func.func private @eps_inf(!te.qtensor<16x16xbf16, #te.fp8_current<e4m3, eps = 1.0e39>, rowwise>)

// -----

// eps = 1 is the largest accepted.
func.func private @eps_one(!te.qtensor<16x16xbf16, #te.fp8_current<e4m3, eps = 1.0>, rowwise>)

// -----

// expected-error @+1 {{invalid #te.fp8_block: eps must be a finite value in [0, 1] (it bounds amax from below), got -0.5}}
func.func private @negative_block_eps(!te.qtensor<16x16xbf16, #te.fp8_block<e4m3, 1x128, eps = -0.5>, rowwise>)

// -----

// expected-error @+1 {{invalid #te.fp8_block: eps must be a finite value in [0, 1] (it bounds amax from below), got 2}}
func.func private @block_eps_two(!te.qtensor<128x128xbf16, #te.fp8_block<e4m3, 128x128, pow2, eps = 2.0>, rowwise>)

// -----

// expected-error @+1 {{expected amax algorithm 'max' or 'most_recent', got 'mean'}}
func.func private @bad_algo(!te.qtensor<16x16xbf16, #te.fp8_delayed<e4m3, algo = mean>, rowwise>)

// -----

// expected-error @+1 {{expected FP8 format 'e4m3' or 'e5m2', got 'e3m4'}}
func.func private @bad_format(!te.qtensor<16x16xbf16, #te.mxfp8<e3m4>, rowwise>)

// -----

// NVFP4 has fixed formats: e2m1 elements, e4m3 block scales.
// expected-error @+1 {{#te.nvfp4 has no element format option: its elements are always e2m1 and its block scales e4m3, so 'e5m2' is not allowed}}
func.func private @nvfp4_e5m2(!te.qtensor<16x16xbf16, #te.nvfp4<e5m2>, rowwise>)

// -----

// expected-error @+1 {{option 'pow2' is given twice}}
func.func private @duplicate_option(!te.qtensor<16x16xbf16, #te.fp8_current<e4m3, pow2, pow2>, rowwise>)

// -----

// expected-error @+1 {{unknown nvfp4 option 'hadamard'; expected 'rht', 'sr' or 'block2d'}}
func.func private @unknown_option(!te.qtensor<16x16xbf16, #te.nvfp4<hadamard>, rowwise>)

// -----

// expected-error @+1 {{#te.mxfp8 takes no option 'pow2'}}
func.func private @mxfp8_option(!te.qtensor<32x32xbf16, #te.mxfp8<e4m3, pow2>, rowwise>)

// -----

// expected-error @+1 {{invalid #te.fp8_block: fp8_block tiles are 1x128 or 128x128}}
func.func private @bad_tile(!te.qtensor<128x128xbf16, #te.fp8_block<e4m3, 64x128>, rowwise>)

// -----

// expected-error @+1 {{expected a tile shape '1x128' or '128x128'}}
func.func private @tile_rank(!te.qtensor<128x128xbf16, #te.fp8_block<e4m3, 1x1x128>, rowwise>)

// -----

// expected-error @+1 {{invalid #te.identity: it keeps a high-precision type (f32, f16 or bf16), got 'f8E4M3FN'}}
func.func private @identity_fp8(!te.qtensor<16x16xbf16, #te.identity<f8E4M3FN>, rowwise>)

// -----

// expected-error @+1 {{#te.hybrid cannot nest: its columnwise scheme is itself a #te.hybrid}}
func.func private @nested_hybrid(!te.qtensor<32x32xbf16, #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.hybrid<rowwise = #te.nvfp4<>, columnwise = #te.nvfp4<>>>, rowwise>)

// -----

// expected-error @+1 {{expected a quantization scheme for the columnwise direction (e.g. #te.mxfp8<e4m3>), got 42 : i32}}
func.func private @hybrid_not_scheme(!te.qtensor<32x32xbf16, #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = 42 : i32>, rowwise>)

// -----

// MXFP8 rowwise blocks are 32 consecutive elements of a row.
// expected-error @+1 {{!te.qtensor<2-D> mxfp8 rowwise blocks run along the last dimension: its size 100 must be a multiple of the block size 32}}
func.func private @mxfp8_rowwise_shape(!te.qtensor<64x100xbf16, #te.mxfp8<e4m3>, rowwise>)

// -----

// MXFP8 columnwise blocks are 32 consecutive rows; 3-D shapes flatten to M x K.
// expected-error @+1 {{!te.qtensor<3-D> mxfp8 columnwise blocks run down the leading dimension(s): their size 48 must be a multiple of the block size 32}}
func.func private @mxfp8_columnwise_shape(!te.qtensor<2x24x64xbf16, #te.mxfp8<e4m3>, columnwise>)

// -----

// expected-error @+1 {{nvfp4 rowwise blocks run along the last dimension: its size 40 must be a multiple of the block size 16}}
func.func private @nvfp4_shape(!te.qtensor<16x40xbf16, #te.nvfp4<>, rowwise|columnwise>)

// -----

// 16x16 blocks need both extents even for one direction.
// expected-error @+1 {{nvfp4 block2d quantizes 16x16 tiles: the leading dimension(s) (size 8) and the last dimension (size 32) must both be multiples of 16}}
func.func private @nvfp4_2d_shape(!te.qtensor<8x32xbf16, #te.nvfp4<block2d>, rowwise>)

// -----

// Each direction of a hybrid is checked against its own scheme: NVFP4
// columnwise needs M % 16 == 0.
// expected-error @+1 {{nvfp4 columnwise blocks run down the leading dimension(s): their size 40 must be a multiple of the block size 16}}
func.func private @hybrid_shape(!te.qtensor<40x64xbf16, #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.nvfp4<>>, rowwise|columnwise>)

// -----

// expected-error @+1 {{!te.qtensor needs at least 2 dimensions (it is viewed as M x K), got rank 1}}
func.func private @rank1(!te.qtensor<64xbf16, #te.fp8_current<e4m3>, rowwise>)

// -----

// expected-error @+1 {{!te.qtensor source element type must be bf16, f16 or f32, got 'i8'}}
func.func private @int_source(!te.qtensor<16x16xi8, #te.fp8_current<e4m3>, rowwise>)

// -----

// expected-error @+1 {{expected direction 'rowwise' or 'columnwise', got 'diagonal'}}
func.func private @bad_direction(!te.qtensor<16x16xbf16, #te.fp8_current<e4m3>, diagonal>)

// -----

// expected-error @+1 {{!te.qtensor dimension 0 must be static and positive, got 0}}
func.func private @empty(!te.qtensor<0x16xbf16, #te.fp8_current<e4m3>, rowwise>)

// -----

// expected-error @+1 {{expected a quantization scheme (e.g. #te.mxfp8<e4m3>), got "mxfp8"}}
func.func private @string_scheme(!te.qtensor<32x32xbf16, "mxfp8", rowwise>)

// -----

// expected-error @+1 {{unknown target architecture 'h100'; expected sm_XY or sm_XYa (e.g. sm_90a)}}
module attributes {te.target = #te.target<"h100">} {}

// -----

// Double quantization dequantizes the rowwise direction and quantizes the
// columnwise one again: neither may be #te.identity.
// expected-error @+1 {{columnwise_source = rowwise_dequantized quantizes the dequantized rowwise values again: the columnwise scheme must quantize, not be #te.identity}}
func.func private @double_identity(!te.qtensor<32x32xbf16, #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.identity<bf16>, columnwise_source = rowwise_dequantized>, rowwise>)

// -----

// A delayed-scaling direction keeps a state between calls; quantizing the
// rowwise direction a second time would record into it twice.
// expected-error @+1 {{columnwise_source = rowwise_dequantized is not supported with a #te.fp8_delayed rowwise scheme (its amax history is kept between calls)}}
func.func private @double_delayed(!te.qtensor<32x32xbf16, #te.hybrid<rowwise = #te.fp8_delayed<e4m3>, columnwise = #te.mxfp8<e4m3>, columnwise_source = rowwise_dequantized>, rowwise>)

// -----

// expected-error @+1 {{columnwise_source is 'original' or 'rowwise_dequantized', not 'rowwise'}}
func.func private @double_bad_source(!te.qtensor<32x32xbf16, #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.nvfp4<>, columnwise_source = rowwise>, rowwise>)

// -----

// The rowwise quantization runs even where only the columnwise direction is
// held, so its scheme must accept the shape (MXFP8 rowwise needs K % 32).
// expected-error @+1 {{columnwise_source = rowwise_dequantized quantizes rowwise first, but mxfp8 rowwise blocks run along the last dimension: its size 48 must be a multiple of the block size 32}}
func.func private @double_source_shape(!te.qtensor<128x48xbf16, #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.fp8_block<e4m3, 1x128>, columnwise_source = rowwise_dequantized>, columnwise>)
