"""The Python package on the CPU backend (NumPy, no GPU): compiling, calling,
sessions with persistent values, results byte for byte as te-run writes them,
and every error path."""

import os
import subprocess

import numpy as np
import pytest

import tejit

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TE_RUN = os.environ.get("TEJIT_TE_RUN", os.path.join(ROOT, "build", "bin", "te-run"))

QUANTIZE = """
func.func @quantize(%x: tensor<128x256xbf16>)
    -> (!te.qtensor<128x256xbf16, #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.fp8_block<e4m3, 1x128>>, rowwise|columnwise>,
        tensor<256xf32>) {
  %q = te.quantize %x : tensor<128x256xbf16>
         -> !te.qtensor<128x256xbf16, #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.fp8_block<e4m3, 1x128>>, rowwise|columnwise>
  %db = te.bias_grad %x : tensor<128x256xbf16> -> tensor<256xf32>
  return %q, %db : !te.qtensor<128x256xbf16, #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.fp8_block<e4m3, 1x128>>, rowwise|columnwise>,
                   tensor<256xf32>
}
"""

SESSION = """
func.func @sums(%w: tensor<64x128xf32> {te.persistent = "w"}, %x: tensor<64x128xf32>)
    -> (tensor<128xf32>, tensor<128xf32>) {
  %a = te.bias_grad %w : tensor<64x128xf32> -> tensor<128xf32>
  %b = te.bias_grad %x : tensor<64x128xf32> -> tensor<128xf32>
  return %a, %b : tensor<128xf32>, tensor<128xf32>
}
"""


def random_bf16(shape, seed):
    rng = np.random.default_rng(seed)
    return tejit.float_to_bf16_bits(rng.standard_normal(shape).astype(np.float32))


def test_compile_lists_functions_and_signatures():
    m = tejit.compile(QUANTIZE)
    assert m.functions == ["quantize"]
    assert m.arch == "sm_90a"
    d = m.describe("quantize")
    assert d["arguments"][0]["shape"] == (128, 256)
    assert d["arguments"][0]["dtype"] == "bf16"
    q = d["results"][0]
    assert q["quantized"] and q["type"].startswith("!te.qtensor<128x256xbf16")
    assert [p[0] for p in q["parts"]] == [
        "rowwise.data", "rowwise.scale_inv", "columnwise.data", "columnwise.scale_inv"]


def test_compile_from_a_path():
    m = tejit.compile(os.path.join(ROOT, "examples", "quantize_hybrid.mlir"))
    assert m.functions == ["quantize_grad"]


def test_compile_error_carries_the_location():
    with pytest.raises(tejit.CompileError) as e:
        tejit.compile("func.func @f(%x: tensor<4x4xbf16>) {\n  te.nonsense %x\n}\n", name="bad.mlir")
    assert "bad.mlir:2:" in str(e.value)
    assert isinstance(e.value, ValueError)


def test_verifier_error_carries_the_location():
    bad = QUANTIZE.replace("tensor<256xf32>) {", "tensor<255xf32>) {", 1)
    with pytest.raises(tejit.CompileError) as e:
        tejit.compile(bad, name="q.mlir")
    assert "q.mlir:" in str(e.value) and "error" in str(e.value)


def test_cpu_results_have_shapes_dtypes_and_parts():
    m = tejit.compile(QUANTIZE)
    x = random_bf16((128, 256), 1)
    q, db = m.quantize(x)
    assert isinstance(q, tejit.QuantizedTensor)
    assert q.directions == ["rowwise", "columnwise"]
    assert q.rowwise_data.shape == (128, 256) and q.rowwise_data.dtype == np.uint8
    assert q.rowwise_scale_inv.dtype == np.uint8  # E8M0 bytes
    assert q.columnwise_scale_inv.dtype == np.float32
    assert db.shape == (256,) and db.dtype == np.float32
    want = tejit.bf16_bits_to_float(x).astype(np.float64).sum(axis=0)
    np.testing.assert_allclose(db, want, rtol=1e-5, atol=1e-4)


def test_float32_input_rounds_to_bf16_like_te_run():
    m = tejit.compile(QUANTIZE)
    f = np.random.default_rng(2).standard_normal((128, 256)).astype(np.float32)
    _, a = m.quantize(f)
    _, b = m.quantize(tejit.float_to_bf16_bits(f))
    assert a.tobytes() == b.tobytes()


@pytest.mark.skipif(not os.path.exists(TE_RUN), reason="te-run not built")
def test_results_equal_te_run_byte_for_byte(tmp_path):
    m = tejit.compile(QUANTIZE)
    x = random_bf16((128, 256), 3)
    np.save(tmp_path / "x.npy", x)
    src = tmp_path / "q.mlir"
    src.write_text(QUANTIZE)
    subprocess.run([TE_RUN, str(src), "--backend", "cpu", "--input", f"arg0={tmp_path / 'x.npy'}",
                    "--dump", str(tmp_path / "out")], check=True, capture_output=True)
    q, db = m.quantize(x)
    for part, arr in q.parts.items():
        dumped = np.load(tmp_path / "out" / f"result0.{part}.npy")
        assert dumped.tobytes() == arr.tobytes(), part
    assert np.load(tmp_path / "out" / "result1.npy").tobytes() == db.tobytes()


def test_session_keeps_persistent_values():
    m = tejit.compile(SESSION)
    s = m.new_session("cpu")
    assert s.persistent_names() == ["w"]
    assert not s.holds("w")
    s.set("w", np.full((64, 128), 0.25, np.float32))
    assert s.holds("w")
    x = np.ones((64, 128), np.float32)
    for _ in range(2):
        a, b = s.sums(x)
        assert a[0] == 16.0 and b[0] == 64.0
    np.testing.assert_array_equal(s.read("w"), np.full((64, 128), 0.25, np.float32))
    s.set("w", np.full((64, 128), 2.0, np.float32))
    assert s.sums(x)[0][0] == 128.0
    # The module's own calls use its default CPU session.
    m.session("cpu").set("w", np.zeros((64, 128), np.float32))
    assert m.sums(x)[0][0] == 0.0


def test_errors_are_exceptions():
    m = tejit.compile(SESSION)
    s = m.new_session("cpu")
    x = np.ones((64, 128), np.float32)
    with pytest.raises(tejit.Error, match="persistent 'w'"):
        s.sums(x)
    with pytest.raises(tejit.Error, match="shape"):
        s.set("w", np.zeros((64, 127), np.float32))
    with pytest.raises(tejit.Error, match="no persistent value"):
        s.set("v", x)
    with pytest.raises(tejit.Error, match="takes 1 argument"):
        s.sums()
    with pytest.raises(tejit.Error, match="float64"):
        s.set("w", np.zeros((64, 128), np.float64))
    with pytest.raises(AttributeError):
        m.nope
    with pytest.raises(tejit.Error, match="device"):
        m.new_session("tpu")


def test_float_literals_read_back_exactly():
    from tejit.programs import float_literal

    for x in (0.9, 0.999, 1e-8, 0.0, 0.1, 1e-12, 123456.75, 3.0):
        lit = float_literal(x)
        assert float(lit) == x and ("e" not in lit or "." in lit.split("e")[0]), lit
    with pytest.raises(tejit.Error):
        float_literal(float("inf"))


def adamw_reference(p, g, m, v, lr, step, beta1, beta2, eps, wd):
    """torch.optim.AdamW's update in float64 (the reference the fused kernel
    must stay within float32 rounding of)."""
    p, g, m, v = (a.astype(np.float64) for a in (p, g, m, v))
    p = p * (1 - lr * wd)
    m = beta1 * m + (1 - beta1) * g
    v = beta2 * v + (1 - beta2) * g * g
    mhat = m / (1 - beta1 ** step)
    vhat = v / (1 - beta2 ** step)
    return p - lr * mhat / (np.sqrt(vhat) + eps), m, v


def test_adam_program_on_the_cpu_backend_matches_adamw():
    from tejit.programs import adam_program

    shapes = [(64, 128), (96,)]
    text = adam_program(shapes, ["f32", "f32"], (0.9, 0.95), 1e-8, 0.1, True)
    m = tejit.compile(text)
    rng = np.random.default_rng(5)
    state = [[rng.standard_normal(s).astype(np.float32), np.zeros(s, np.float32), np.zeros(s, np.float32)]
             for s in shapes]
    for step in range(1, 4):
        grads = [rng.standard_normal(s).astype(np.float32) for s in shapes]
        args = [np.array(1e-2, np.float32), np.array(step, np.int64)]
        for (p, mo, v), g in zip(state, grads):
            args += [p, g, mo, v]
        out = m.step(*args)
        for i, ((p, mo, v), g) in enumerate(zip(state, grads)):
            want = adamw_reference(p, g, mo, v, 1e-2, step, 0.9, 0.95, 1e-8, 0.1)
            for got, ref in zip(out[3 * i:3 * i + 3], want):
                np.testing.assert_allclose(got, ref, rtol=2e-6, atol=1e-7)
            state[i] = list(out[3 * i:3 * i + 3])


@pytest.mark.parametrize("recipe", ["bf16", "fp8_block", "mxfp8", "nvfp4", "mxfp8_nvfp4"])
def test_linear_program_compiles_and_runs_on_the_cpu_backend(recipe):
    from tejit.programs import Recipe, linear_program

    m = tejit.compile(linear_program(128, 256, 128, Recipe(recipe), True))
    s = m.new_session("cpu")
    rng = np.random.default_rng(6)
    x = tejit.float_to_bf16_bits(rng.standard_normal((128, 256)).astype(np.float32))
    w = (rng.standard_normal((128, 256)) * 0.05).astype(np.float32)
    b = tejit.float_to_bf16_bits(np.zeros(128, np.float32))
    y = s.forward(x, w, b)
    assert y.shape == (128, 128) and s.holds("weight")
    dy = tejit.float_to_bf16_bits((rng.standard_normal((128, 128)) * 0.01).astype(np.float32))
    dx, dw, db = s.backward(dy, x)
    assert dx.shape == (128, 256) and dw.shape == (128, 256) and db.shape == (128,)
    # y approximates x W^T within the recipe's precision.
    ref = tejit.bf16_bits_to_float(x).astype(np.float64) @ w.T.astype(np.float64)
    err = np.abs(tejit.bf16_bits_to_float(y) - ref).max() / np.abs(ref).max()
    assert err < (0.02 if recipe == "bf16" else 0.3), err
    # The eval function needs no persistent state.
    y2 = m.new_session("cpu").evaluate(x, w, b)
    assert y2.shape == (128, 128)


def test_a_recipe_may_pair_two_scheme_families():
    # MXFP8 activations and weights with NVFP4 gradients: the dgrad pairs
    # NVFP4 dy with the MXFP8 weight's columnwise copy, the wgrad NVFP4 dy
    # with MXFP8 x - each dequantized, then the bf16 GEMM (docs/Numerics.md
    # section 11).
    from tejit.programs import Recipe, linear_program

    recipe = Recipe({"input": "#te.mxfp8<e4m3>", "weight": "#te.mxfp8<e4m3>",
                     "grad_output": "#te.nvfp4<>"})
    m = tejit.compile(linear_program(128, 256, 128, recipe, True))
    s = m.new_session("cpu")
    rng = np.random.default_rng(7)
    x = tejit.float_to_bf16_bits(rng.standard_normal((128, 256)).astype(np.float32))
    w = (rng.standard_normal((128, 256)) * 0.05).astype(np.float32)
    b = tejit.float_to_bf16_bits(np.zeros(128, np.float32))
    s.forward(x, w, b)
    dy = tejit.float_to_bf16_bits((rng.standard_normal((128, 128)) * 0.01).astype(np.float32))
    dx, dw, db = s.backward(dy, x)
    # dx = dy W and dW = dy^T x within the two formats' precision (about
    # 0.1 of the largest output here; a wrong layout or scale is off by 1).
    dy64 = tejit.bf16_bits_to_float(dy).astype(np.float64)
    x64 = tejit.bf16_bits_to_float(x).astype(np.float64)
    for got, ref in ((tejit.bf16_bits_to_float(dx), dy64 @ w.astype(np.float64)),
                     (dw, dy64.T @ x64)):
        err = np.abs(np.asarray(got, np.float64) - ref).max() / np.abs(ref).max()
        assert err < 0.2, err


def test_recipe_errors():
    from tejit.programs import Recipe

    with pytest.raises(tejit.Error, match="unknown recipe"):
        Recipe("fp9")
    with pytest.raises(tejit.Error, match="grad_output"):
        Recipe({"input": "#te.mxfp8<e4m3>", "weight": "#te.mxfp8<e4m3>"})
    r = Recipe('te.recipe @mine {\n  te.rule "linear", "weight" -> #te.mxfp8<e4m3>\n  te.rule "*", "*" -> #te.identity<bf16>\n}')
    assert r.name == "mine" and r.weight == "#te.mxfp8<e4m3>"


@pytest.mark.parametrize("scheme", [
    "#te.mxfp8<e4m3>", "#te.fp8_block<e4m3, 1x128>", "#te.fp8_block<e4m3, 128x128, pow2>",
    "#te.nvfp4<>", "#te.nvfp4<rht>", "#te.fp8_current<e5m2>",
    "#te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.nvfp4<rht>>"])
def test_dequantize_on_the_cpu_equals_one_program(scheme):
    qtype = f"!te.qtensor<128x256xbf16, {scheme}, rowwise|columnwise>"
    m = tejit.compile(f"""
func.func @q(%x: tensor<128x256xbf16>) -> {qtype} {{
  %q = te.quantize %x : tensor<128x256xbf16> -> {qtype}
  return %q : {qtype}
}}""")
    x = random_bf16((128, 256), 11)
    q = m.q(x)
    for direction in ("rowwise", "columnwise"):
        one = tejit.compile(f"""
func.func @rt(%x: tensor<128x256xbf16>) -> tensor<128x256xbf16> {{
  %q = te.quantize %x : tensor<128x256xbf16> -> {qtype}
  %d = te.dequantize %q {direction} : {qtype} -> tensor<128x256xbf16>
  return %d : tensor<128x256xbf16>
}}""")
        got = q.dequantize(direction)
        assert got.dtype == np.uint16 and got.shape == (128, 256)
        assert got.tobytes() == one.rt(x).tobytes(), direction


def test_adam_program_with_requantize_runs_on_the_cpu_backend():
    from tejit.programs import Recipe, adam_program, weight_type

    qtype = weight_type(128, 256, Recipe("mxfp8"))
    m = tejit.compile(adam_program([(128, 256)], ["f32"], (0.9, 0.999), 1e-8, 0.0, True, [qtype]))
    rng = np.random.default_rng(9)
    p = rng.standard_normal((128, 256)).astype(np.float32)
    z = np.zeros((128, 256), np.float32)
    out = m.step(np.array(1e-3, np.float32), np.array(1, np.int64), p, rng.standard_normal((128, 256)).astype(np.float32), z, z)
    assert len(out) == 4 and isinstance(out[3], tejit.QuantizedTensor)
    assert out[3].directions == ["rowwise", "columnwise"]


def moe_program(rules, n):
    """An MoE forward under recipe @r (`rules`: its te.rule lines): the
    grouped layer @grouped of 3 experts (192 token rows, K = 128, N = `n`)
    and the dense layers @dense64 / @dense96 an expert of 64 or 96 rows
    would run alone."""
    def dense(m):
        return f"""
func.func @dense{m}(%x: tensor<{m}x128xbf16>, %w: tensor<{n}x128xbf16>) -> tensor<{m}x{n}xbf16> {{
  %y = te.linear %x, %w {{recipe = @r}} : tensor<{m}x128xbf16>, tensor<{n}x128xbf16> -> tensor<{m}x{n}xbf16>
  return %y : tensor<{m}x{n}xbf16>
}}"""
    return f"""
te.recipe @r {{
{rules}
}}
func.func @grouped(%x: tensor<192x128xbf16>, %w: tensor<3x{n}x128xbf16>,
                   %s: tensor<3xi64>) -> tensor<192x{n}xbf16> {{
  %y = te.grouped_linear %x, %w, %s {{recipe = @r}}
         : tensor<192x128xbf16>, tensor<3x{n}x128xbf16>, tensor<3xi64> -> tensor<192x{n}xbf16>
  return %y : tensor<192x{n}xbf16>
}}""" + dense(64) + dense(96)


MXFP8_MOE = moe_program('  te.rule "*", "*" -> #te.mxfp8<e4m3>', 64)
CURRENT_MOE = moe_program('  te.rule "*", "*" -> #te.fp8_current<e4m3, pow2>', 128)
NVFP4_MOE = moe_program("""  te.rule "*", "weight" -> #te.nvfp4<block2d>
  te.rule "*", "input" -> #te.nvfp4<>""", 64)


def check_grouped_forward_is_each_experts_own(program, xf, wf, exact=True,
                                              grouped_mxfp8="auto",
                                              grouped_nvfp4="auto",
                                              sum_bound=None):
    """Splits of 64, 0 and 96 rows (32 padding rows) of the float tokens
    `xf` [192, 128] and stack `wf` [3, N, 128]: each expert's rows equal the
    dense te.linear of that expert alone on the CPU backend - bit for bit, or
    (`exact` False: the two run different kernels) to one bf16 ulp, or with
    `sum_bound` to that fraction of sum |x||w| over the output's products."""
    m = tejit.compile(program, grouped_mxfp8=grouped_mxfp8,
                      grouped_nvfp4=grouped_nvfp4)
    x = tejit.float_to_bf16_bits(xf)
    w = tejit.float_to_bf16_bits(wf)
    splits = np.array([64, 0, 96], np.int64)
    y = m.grouped(x, w, splits)
    for rows, dense in ((slice(0, 64), m.dense64(x[0:64], w[0])),
                        (slice(64, 160), m.dense96(x[64:160], w[2]))):
        if exact and sum_bound is None:
            np.testing.assert_array_equal(y[rows], dense)
            continue
        got = tejit.bf16_bits_to_float(y[rows])
        want = tejit.bf16_bits_to_float(dense)
        ulp = np.maximum(np.abs(got), np.abs(want)) * 2.0**-7
        if sum_bound is not None:
            expert = 0 if rows.start == 0 else 2
            ulp = ulp + sum_bound * (np.abs(xf[rows]) @ np.abs(wf[expert]).T)
        assert np.all(np.abs(got - want) <= ulp), \
            np.max(np.abs(got - want) / np.maximum(ulp, 1e-30))
    assert not y[160:].any(), "padding rows are zeros"


def test_mxfp8_grouped_layer_is_each_experts_own_mxfp8_linear():
    # MXFP8 blocks run along K inside each expert's rows, so the grouped
    # forward equals the dense MXFP8 te.linear of each expert alone. At this
    # shape te-legalize-target reads the operands directly (the engine's
    # MXFP8 kernel, docs/Numerics.md 5.4) while the dense layer on Hopper
    # dequantizes them: the two sum in different orders and agree to one
    # bf16 ulp.
    rng = np.random.default_rng(11)
    xf = rng.standard_normal((192, 128)).astype(np.float32)
    wf = rng.standard_normal((3, 64, 128)).astype(np.float32)
    check_grouped_forward_is_each_experts_own(MXFP8_MOE, xf, wf, exact=False)
    # Forced onto the dequantized path, the grouped GEMM is the dense one's
    # bf16 GEMM on the same dequantized values: bit for bit.
    check_grouped_forward_is_each_experts_own(MXFP8_MOE, xf, wf,
                                              grouped_mxfp8="dequantize")
    with pytest.raises(tejit.CompileError, match="auto, direct or dequantize"):
        tejit.compile(MXFP8_MOE, grouped_mxfp8="fast")


def test_per_tensor_grouped_layer_scales_each_expert_by_its_own_amax():
    # Per-tensor FP8 current scaling in a grouped layer: each expert's tokens
    # and weight get their own amax, so its rows equal the dense per-tensor
    # te.linear of that expert alone. With pow2 scales and K = 128 (one
    # block: the grouped GEMM's one promotion is the dense GEMM's scaling)
    # that holds bit for bit.
    rng = np.random.default_rng(12)
    xf = rng.standard_normal((192, 128)).astype(np.float32)
    xf[0:64] /= 1000.0  # expert 0's tokens far smaller than expert 2's
    wf = rng.standard_normal((3, 128, 128)).astype(np.float32)
    wf[2] *= 300.0
    check_grouped_forward_is_each_experts_own(CURRENT_MOE, xf, wf)


def test_nvfp4_grouped_layer_is_each_experts_own_nvfp4_linear():
    # NVFP4's tensor scale is each expert's: on its dequantized path the
    # grouped forward (each expert's tokens and weight quantized with their
    # own amax, dequantized, the bf16 grouped GEMM) equals the dense NVFP4
    # te.linear of each expert alone (dequantize kernels and a bf16 GEMM on
    # Hopper) - 16x16 weight blocks included - bit for bit.
    rng = np.random.default_rng(13)
    xf = rng.standard_normal((192, 128)).astype(np.float32)
    xf[64:160] *= 50.0  # expert 2's tokens far larger than expert 0's
    wf = rng.standard_normal((3, 64, 128)).astype(np.float32)
    check_grouped_forward_is_each_experts_own(NVFP4_MOE, xf, wf,
                                              grouped_nvfp4="dequantize")
    # At this shape te-legalize-target has the engine's NVFP4 kernel read the
    # codes (exact products of codes and block scales, the global scales
    # once, docs/Numerics.md 6.7): the dense layer's bf16-rounded values
    # differ from those by at most 2^-8 relative each, so the two agree to
    # 2^-7 of sum |x||w| (FP4's own error cancels: both read the same codes).
    check_grouped_forward_is_each_experts_own(NVFP4_MOE, xf, wf,
                                              sum_bound=2.0**-7)
    # ... and that is a different path from the values' (not the same bits).
    args = (tejit.float_to_bf16_bits(xf), tejit.float_to_bf16_bits(wf),
            np.array([64, 0, 96], np.int64))
    codes = tejit.compile(NVFP4_MOE).grouped(*args)
    values = tejit.compile(NVFP4_MOE, grouped_nvfp4="dequantize").grouped(*args)
    assert (codes != values).any()
    np.testing.assert_array_equal(
        codes, tejit.compile(NVFP4_MOE, grouped_nvfp4="direct").grouped(*args))
    with pytest.raises(tejit.CompileError, match="auto, direct or dequantize"):
        tejit.compile(NVFP4_MOE, grouped_nvfp4="codes")


def moe_grad_program(rules):
    """The backward of an MoE layer under recipe @r (`rules`: its te.rule
    lines): @grouped_grad of 3 experts (192 token rows, K = 128, N = 64,
    with the bias gradient) and the dense @dense64 / @dense96 an expert of
    64 or 96 rows would run alone."""
    def dense(m):
        return f"""
func.func @dense{m}(%dy: tensor<{m}x64xbf16>, %x: tensor<{m}x128xbf16>, %w: tensor<64x128xbf16>)
    -> (tensor<{m}x128xbf16>, tensor<64x128xf32>, tensor<64xf32>) {{
  %dx, %dw, %db = te.linear_grad %dy, %x, %w {{recipe = @r, bias}}
         : tensor<{m}x64xbf16>, tensor<{m}x128xbf16>, tensor<64x128xbf16>
         -> tensor<{m}x128xbf16>, tensor<64x128xf32>, tensor<64xf32>
  return %dx, %dw, %db : tensor<{m}x128xbf16>, tensor<64x128xf32>, tensor<64xf32>
}}"""
    return f"""
te.recipe @r {{
{rules}
}}
func.func @grouped_grad(%dy: tensor<192x64xbf16>, %x: tensor<192x128xbf16>,
                        %w: tensor<3x64x128xbf16>, %s: tensor<3xi64>)
    -> (tensor<192x128xbf16>, tensor<3x64x128xf32>, tensor<3x64xf32>) {{
  %dx, %dw, %db = te.grouped_linear_grad %dy, %x, %w, %s {{recipe = @r, bias}}
         : tensor<192x64xbf16>, tensor<192x128xbf16>, tensor<3x64x128xbf16>, tensor<3xi64>
         -> tensor<192x128xbf16>, tensor<3x64x128xf32>, tensor<3x64xf32>
  return %dx, %dw, %db : tensor<192x128xbf16>, tensor<3x64x128xf32>, tensor<3x64xf32>
}}""" + dense(64) + dense(96)


def check_grouped_backward_is_each_experts_own(program, seed):
    """Splits of 64, 0 and 96 rows (32 padding rows): each expert's dx
    rows, dW and db equal the dense te.linear_grad of that expert alone,
    bit for bit on the CPU backend."""
    m = tejit.compile(program)
    rng = np.random.default_rng(seed)
    bits = lambda *shape: tejit.float_to_bf16_bits(rng.standard_normal(shape).astype(np.float32))
    dy, x, w = bits(192, 64), bits(192, 128), bits(3, 64, 128)
    splits = np.array([64, 0, 96], np.int64)
    dx, dw, db = m.grouped_grad(dy, x, w, splits)
    for g, rows, dense in ((0, slice(0, 64), m.dense64), (2, slice(64, 160), m.dense96)):
        dx1, dw1, db1 = dense(dy[rows], x[rows], w[g])
        np.testing.assert_array_equal(dx[rows], dx1)
        np.testing.assert_array_equal(dw[g], dw1)
        np.testing.assert_array_equal(db[g], db1)
    assert not dw[1].any() and not db[1].any(), "the empty expert"
    assert not dx[160:].any(), "padding rows are zeros"


def test_mxfp8_grouped_backward_is_each_experts_own_mxfp8_linear_grad():
    # The MXFP8 grouped backward (docs/Numerics.md 7.4): the dgrad on
    # dequantized dy and stack, the wgrad on each expert's 32-row blocks
    # quantized and dequantized; splits of whole blocks.
    check_grouped_backward_is_each_experts_own(
        moe_grad_program('  te.rule "*", "*" -> #te.mxfp8<e4m3>'), 12)


def test_nvfp4_grouped_backward_is_each_experts_own_nvfp4_linear_grad():
    # TE's NVFP4 recipe in a grouped backward (docs/Numerics.md 7.4): dy
    # stochastically rounded, the wgrad's operands Hadamard-transformed,
    # 16x16 weight blocks; each expert quantized with its own tensor scales
    # and random bytes, so it is its own NVFP4 te.linear_grad.
    check_grouped_backward_is_each_experts_own(moe_grad_program("""  te.rule "*", "weight" -> #te.nvfp4<block2d>
  te.rule "*", "input" -> #te.nvfp4<rht>
  te.rule "*", "grad_output" -> #te.nvfp4<rht, sr>"""), 14)


def test_moe_example_gives_each_expert_its_own_rows():
    # examples/moe_block_fp8.mlir: 8 experts, 1024 token rows, block FP8.
    # Ragged split sizes with empty experts and 100 padding rows.
    m = tejit.compile(os.path.join(ROOT, "examples", "moe_block_fp8.mlir"))
    rng = np.random.default_rng(7)
    x = tejit.float_to_bf16_bits(rng.standard_normal((1024, 512)).astype(np.float32))
    w = tejit.float_to_bf16_bits((rng.standard_normal((8, 256, 512)) * 0.05).astype(np.float32))
    splits = np.array([100, 0, 200, 150, 0, 300, 100, 74], np.int64)
    s = m.new_session("cpu")
    s.set("experts.w1", w)
    h = s.up(x, splits)  # the persistent w1 comes from the session
    assert h.shape == (1024, 256)
    hf = tejit.bf16_bits_to_float(h).astype(np.float64)
    xf = tejit.bf16_bits_to_float(x).astype(np.float64)
    wf = tejit.bf16_bits_to_float(w).astype(np.float64)
    row = 0
    for g, n in enumerate(splits):
        ref = xf[row:row + n] @ wf[g].T
        if n:  # FP8 block scaling: a few percent of the largest value
            assert np.abs(hf[row:row + n] - ref).max() < 0.08 * np.abs(ref).max(), g
        row += n
    assert not hf[row:].any(), "padding rows are zeros"


DELAYED = """
te.recipe @delayed {
  te.rule "linear", "grad_output" -> #te.fp8_delayed<e5m2, history = 4>
  te.rule "linear", "*" -> #te.fp8_delayed<e4m3, history = 4>
}
te.recipe @mxfp8 {
  te.rule "*", "*" -> #te.mxfp8<e4m3>
}
func.func @step(%x: tensor<64x128xbf16>, %w: tensor<32x128xbf16> {te.persistent = "w"})
    -> tensor<64x32xbf16> {
  %y = te.linear %x, %w {recipe = @delayed, layer = "fc1"}
      : tensor<64x128xbf16>, tensor<32x128xbf16> -> tensor<64x32xbf16>
  return %y : tensor<64x32xbf16>
}
"""


def test_delayed_scaling_state_lives_in_the_session():
    m = tejit.compile(DELAYED)
    s = m.new_session("cpu")
    assert "fc1.input.delayed_scaling" in s.persistent_names()
    fresh = s.read("fc1.input.delayed_scaling")
    assert fresh["scale"].tolist() == [1.0]
    assert fresh["amax_history"].tolist() == [0.0] * 4
    s.set("w", np.full((32, 128), 0.5, np.float32))
    x = np.full((64, 128), 2.0, np.float32)
    s.step(x)
    s.step(x)
    state = s.read("fc1.input.delayed_scaling")
    # Two steps recorded amax 2: the scale is 448 / 2.
    assert state["scale"].tolist() == [224.0]
    assert state["amax_history"].tolist() == [0.0, 0.0, 2.0, 2.0]


DELAYED_MOE = moe_program(
    '  te.rule "*", "*" -> #te.fp8_delayed<e4m3, history = 4, algo = max, margin = 0, pow2>',
    128).replace("{recipe = @r}", '{recipe = @r, layer = "moe"}', 1) \
    .replace("%y = te.linear %x, %w {recipe = @r}", '%y = te.linear %x, %w {recipe = @r, layer = "e0"}', 1) \
    .replace("%y = te.linear %x, %w {recipe = @r}", '%y = te.linear %x, %w {recipe = @r, layer = "e2"}', 1)


def test_delayed_grouped_layer_keeps_each_experts_own_state():
    # Delayed scaling in a grouped layer: each expert keeps its own amax
    # history ("moe.input.delayed_scaling.expert<g>"), so over several steps
    # its states and rows equal those of the dense delayed-scaling layer of
    # that expert alone (pow2 scales and K = 128: bit for bit on the CPU
    # backend); the empty expert's states stay fresh.
    m = tejit.compile(DELAYED_MOE)
    s = m.new_session("cpu")
    rng = np.random.default_rng(15)
    splits = np.array([64, 0, 96], np.int64)
    for step in range(3):
        xf = rng.standard_normal((192, 128)).astype(np.float32) * (1 + step)
        xf[0:64] /= 100.0  # expert 0's tokens far smaller than expert 2's
        x = tejit.float_to_bf16_bits(xf)
        w = tejit.float_to_bf16_bits(rng.standard_normal((3, 128, 128)).astype(np.float32))
        y = s.grouped(x, w, splits)
        np.testing.assert_array_equal(y[0:64], s.dense64(x[0:64], w[0]))
        np.testing.assert_array_equal(y[64:160], s.dense96(x[64:160], w[2]))
        assert not y[160:].any(), "padding rows are zeros"
    for role in ("input", "weight"):
        for g, layer in ((0, "e0"), (2, "e2")):
            mine = s.read(f"moe.{role}.delayed_scaling.expert{g}")
            alone = s.read(f"{layer}.{role}.delayed_scaling")
            assert mine["scale"].tolist() == alone["scale"].tolist()
            assert mine["amax_history"].tolist() == alone["amax_history"].tolist()
            assert mine["scale"][0] != 1.0, "the state moved"
    empty = s.read("moe.input.delayed_scaling.expert1")
    assert empty["scale"].tolist() == [1.0]
    assert empty["amax_history"].tolist() == [0.0] * 4


def test_a_session_switches_a_layers_recipe():
    m = tejit.compile(DELAYED)
    late = tejit.compile(DELAYED, layer_recipes={"fc1": "mxfp8"})
    s = m.new_session("cpu")
    rng = np.random.default_rng(3)
    s.set("w", rng.standard_normal((32, 128)).astype(np.float32))
    x = rng.standard_normal((64, 128)).astype(np.float32)
    step = s.step
    before = step(x)
    s.switch_module(late)
    after = step(x)  # the entry taken before follows the new module
    # The MXFP8 layer's output: what the module compiled that way computes.
    alone = late.new_session("cpu")
    alone.set("w", s.read("w"))
    assert np.array_equal(after, alone.step(x))
    assert not np.array_equal(after, before)
    with pytest.raises(tejit.CompileError, match="names layer 'fc9'"):
        tejit.compile(DELAYED, layer_recipes={"fc9": "mxfp8"})


SHARDS = """
func.func @from_shards(%s0: tensor<3001xf32>, %s1: tensor<9000xf32>, %s2: tensor<4383xf32>)
    -> !te.qtensor<128x128xf32, #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.nvfp4<>>, rowwise|columnwise> {
  %w = te.quantize_shards %s0, %s1, %s2 : tensor<3001xf32>, tensor<9000xf32>, tensor<4383xf32>
         -> !te.qtensor<128x128xf32, #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.nvfp4<>>, rowwise|columnwise>
  return %w : !te.qtensor<128x128xf32, #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.nvfp4<>>, rowwise|columnwise>
}

func.func @whole(%x: tensor<128x128xf32>)
    -> !te.qtensor<128x128xf32, #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.nvfp4<>>, rowwise|columnwise> {
  %w = te.quantize %x : tensor<128x128xf32>
         -> !te.qtensor<128x128xf32, #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.nvfp4<>>, rowwise|columnwise>
  return %w : !te.qtensor<128x128xf32, #te.hybrid<rowwise = #te.mxfp8<e4m3>, columnwise = #te.nvfp4<>>, rowwise|columnwise>
}
"""


def test_master_shards_quantize_to_the_whole_masters_bytes():
    # A master split at offsets inside rows (docs/Numerics.md section 17):
    # the weight from the three shards is the whole master's, byte for byte.
    m = tejit.compile(SHARDS)
    x = np.random.default_rng(9).standard_normal((128, 128)).astype(np.float32)
    flat = x.reshape(-1)
    shards = np.split(flat, [3001, 12001])
    got = m.from_shards(*shards)
    want = m.whole(x)
    assert list(got.parts) == list(want.parts)
    for part, arr in want.parts.items():
        assert got.parts[part].tobytes() == arr.tobytes(), part


def test_master_shards_that_do_not_add_up_are_refused():
    bad = SHARDS.replace("tensor<4383xf32>", "tensor<4382xf32>")
    with pytest.raises(tejit.CompileError) as e:
        tejit.compile(bad, name="shards.mlir")
    assert "shards.mlir:" in str(e.value)
    assert "the shards hold 16383 of the tensor's 16384 elements" in str(e.value)


# Two recipes beyond the presets whose GEMMs meet a tensor-wide scheme on one
# operand only (docs/Numerics.md 7.4): NVFP4 gradients by an MXFP8 weight
# (the dgrad), per-tensor current tokens by a 128x128 block-FP8 weight.
TENSOR_WIDE_BESIDE = {
    "mxfp8_w_nvfp4_dy": {"input": "#te.mxfp8<e4m3>", "weight": "#te.mxfp8<e4m3>",
                         "grad_output": "#te.nvfp4<sr>"},
    "current_x_block_w": {"input": "#te.fp8_current<e4m3>",
                          "weight": "#te.fp8_block<e4m3, 128x128>",
                          "grad_output": "#te.fp8_current<e5m2>"},
}


@pytest.mark.parametrize("preset", ["bf16", "fp8_block", "mxfp8", "nvfp4", "mxfp8_nvfp4",
                                    *TENSOR_WIDE_BESIDE])
def test_grouped_linear_program_runs_every_preset(preset):
    # tejit.torch.GroupedLinear's program (programs.grouped_linear_program)
    # under every preset, on the CPU backend: each expert's rows of y are
    # close to x_g W_g^T + b_g, dW_g to dy_g^T x_g, db_g to the column sums
    # of dy_g; the empty expert's gradients and the padding rows are zeros.
    from tejit.programs import Recipe, grouped_linear_program
    m, k, n, g = 256, 256, 128, 3
    recipe = Recipe(TENSOR_WIDE_BESIDE.get(preset, preset), kind="grouped_linear")
    mod = tejit.compile(grouped_linear_program(m, k, n, g, recipe, True))
    rng = np.random.default_rng(21)
    f = lambda *shape: rng.standard_normal(shape).astype(np.float32)
    x, w, b, dy = f(m, k), f(g, n, k) * 0.1, f(g, n), f(m, n)
    bits = tejit.float_to_bf16_bits
    as_f = lambda a: tejit.bf16_bits_to_float(a).astype(np.float64)
    splits = np.array([96, 0, 128], np.int64)  # 32 padding rows
    y = as_f(mod.forward(bits(x), bits(w), splits, bits(b)))
    dx, dw, db = mod.backward(bits(dy), bits(x), bits(w), splits)
    xf, wf, bf, dyf = as_f(bits(x)), as_f(bits(w)), as_f(bits(b)), as_f(bits(dy))
    tol = {"bf16": 0.02, "fp8_block": 0.1, "mxfp8": 0.1, "nvfp4": 0.35, "mxfp8_nvfp4": 0.35,
           "mxfp8_w_nvfp4_dy": 0.35, "current_x_block_w": 0.1}[preset]
    row = 0
    for e, rows in enumerate(splits):
        if rows:
            r = slice(row, row + rows)
            for got, want in ((y[r], xf[r] @ wf[e].T + bf[e]), (dw[e], dyf[r].T @ xf[r]),
                              (as_f(dx)[r], dyf[r] @ wf[e])):
                assert np.abs(got - want).max() <= tol * np.abs(want).max(), (preset, e)
            np.testing.assert_allclose(db[e], dyf[r].sum(0), rtol=1e-4, atol=1e-3)
        else:
            assert not dw[e].any() and not db[e].any()
        row += rows
    assert not y[row:].any() and not as_f(dx)[row:].any(), "padding rows are zeros"
