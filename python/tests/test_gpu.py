"""The Python package on the GPU (torch CUDA tensors): results bit for bit
against the CPU backend and te-run, Linear forward/backward, a small MLP
trained with block-FP8 and MXFP8 recipes against BF16, FusedAdam against
torch.optim.AdamW, and FusedAdam replayed from a CUDA graph. Skipped
without torch and a GPU."""

import os
import subprocess

import numpy as np
import pytest

import tejit

torch = pytest.importorskip("torch")
if not (torch.cuda.is_available() and tejit.gpu_available()):
    pytest.skip("no GPU", allow_module_level=True)

import tejit.torch as tt  # noqa: E402

from test_cpu import QUANTIZE, TE_RUN  # noqa: E402


def bf16(shape, seed, scale=1.0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    return (torch.randn(*shape, generator=g, device="cuda") * scale).to(torch.bfloat16)


def host_bits(t):
    """A bf16 CUDA tensor as NumPy uint16 bit patterns."""
    return t.view(torch.int16).cpu().numpy().view(np.uint16)


def test_gpu_results_equal_the_cpu_backend_bit_for_bit():
    m = tejit.compile(QUANTIZE)
    x = bf16((128, 256), 1)
    q_gpu, db_gpu = m.quantize(x)
    q_cpu, db_cpu = m.quantize(host_bits(x))
    assert q_gpu.device == "cuda" and q_gpu.rowwise_data.is_cuda
    for part, arr in q_cpu.parts.items():
        got = q_gpu.parts[part].contiguous().view(torch.uint8).cpu().numpy().tobytes()
        assert got == arr.tobytes(), part
    assert db_gpu.cpu().numpy().tobytes() == db_cpu.tobytes()


def test_cuda_calls_refuse_arguments_that_do_not_fit():
    m = tejit.compile(QUANTIZE)
    x = bf16((128, 256), 1)
    bad = {
        "takes 1 argument": (x, x),
        "got torch.float32\\[128, 256\\] on cuda": (x.float(),),
        "got torch.bfloat16\\[256, 128\\] on cuda": (x.view(256, 128),),
        "got torch.bfloat16\\[128, 256\\] on cpu": (x.cpu(),),
        "must be a contiguous tensor": (x.t().contiguous().t(),),
        "got ndarray": (host_bits(x),),
    }
    f = m.session("cuda").quantize
    for message, args in bad.items():
        with pytest.raises(tejit.Error, match=message):
            f(*args)
        with pytest.raises(tejit.Error, match=message):
            f.call_into(list(args), [])
    # A view at an offset is contiguous and fits: it runs.
    wide = bf16((129, 256), 2)
    q, _ = f(wide[1:])
    ref, _ = f(wide[1:].clone())
    assert torch.equal(q.rowwise_data, ref.rowwise_data)


def test_dequantize_runs_the_compiled_te_dequantize():
    m = tejit.compile(QUANTIZE)
    x = bf16((128, 256), 2)
    q, _ = m.quantize(x)
    for direction in ("rowwise", "columnwise"):
        d = q.dequantize(direction)
        assert d.shape == (128, 256) and d.dtype == torch.bfloat16 and d.is_cuda
        err = (d.float() - x.float()).abs().max().item()
        assert err <= x.float().abs().max().item() * 2 ** -3, (direction, err)
    # The same round trip as one program on the CPU backend, bit for bit.
    rt = tejit.compile("""
func.func @rt(%x: tensor<128x256xbf16>) -> tensor<128x256xbf16> {
  %q = te.quantize %x : tensor<128x256xbf16> -> !te.qtensor<128x256xbf16, #te.mxfp8<e4m3>, rowwise>
  %d = te.dequantize %q rowwise : !te.qtensor<128x256xbf16, #te.mxfp8<e4m3>, rowwise> -> tensor<128x256xbf16>
  return %d : tensor<128x256xbf16>
}""")
    want = rt.rt(host_bits(x))
    assert host_bits(q.dequantize("rowwise")).tobytes() == want.tobytes()


def test_session_buffers_alias_the_persistent_values():
    m = tejit.compile("""
func.func @sums(%w: tensor<64x128xf32> {te.persistent = "w"}) -> tensor<128xf32> {
  %a = te.bias_grad %w : tensor<64x128xf32> -> tensor<128xf32>
  return %a : tensor<128xf32>
}""")
    s = m.new_session("cuda")
    s.set("w", np.ones((64, 128), np.float32))
    view = s.buffers("w")
    assert view.shape == (64, 128) and view.is_cuda
    view.fill_(0.5)  # writes tejit's own buffer
    assert s.sums()[0].item() == 32.0
    np.testing.assert_array_equal(s.read("w"), np.full((64, 128), 0.5, np.float32))


@pytest.mark.skipif(not os.path.exists(TE_RUN), reason="te-run not here")
@pytest.mark.parametrize("recipe", ["fp8_block", "mxfp8", "mxfp8_nvfp4"])
def test_linear_matches_te_run_bit_for_bit(tmp_path, recipe):
    torch.manual_seed(0)
    layer = tt.Linear(256, 384, bias=True, recipe=recipe).cuda()
    x = bf16((256, 256), 3).requires_grad_()
    y = layer(x)
    dy = bf16((256, 384), 4, 0.01)
    y.backward(dy)
    src = tmp_path / "linear.mlir"
    src.write_text(layer.program(256))
    inputs = {"forward.arg0": host_bits(x.detach()), "forward.arg1": layer.weight.detach().cpu().numpy(),
              "forward.arg2": host_bits(layer.bias.detach().to(torch.bfloat16)),
              "backward.arg0": host_bits(dy), "backward.arg1": host_bits(x.detach())}
    for name, arr in inputs.items():
        np.save(tmp_path / f"{name}.npy", arr)
    for entries, out in (("forward", "fwd"), ("forward,backward", "bwd")):
        flags = []
        for name in inputs:
            if name.split(".")[0] in entries.split(","):
                flags += ["--input", f"{name}={tmp_path / name}.npy"]
        run = subprocess.run([TE_RUN, str(src), "--backend", "cuda", "--entry", entries, "--dump",
                              str(tmp_path / out)] + flags, capture_output=True, text=True)
        assert run.returncode == 0, run.stderr
    assert np.load(tmp_path / "fwd" / "result0.npy").tobytes() == host_bits(y.detach()).tobytes()
    assert np.load(tmp_path / "bwd" / "result0.npy").tobytes() == host_bits(x.grad).tobytes()
    assert np.load(tmp_path / "bwd" / "result1.npy").tobytes() == layer.weight.grad.cpu().numpy().tobytes()
    assert np.load(tmp_path / "bwd" / "result2.npy").tobytes() == layer.bias.grad.cpu().numpy().tobytes()


def train_mlp(recipe, steps=200):
    """Online regression: every step a fresh batch from a fixed teacher plus
    label noise (variance 0.04), the same sequence for every recipe, so the
    loss approaches the noise floor and cannot be memorised."""
    torch.manual_seed(1234)
    teacher = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.Tanh(), torch.nn.Linear(512, 128)).cuda()
    for p in teacher.parameters():
        p.data *= 3  # outputs of order 1
    l1, l2 = tt.Linear(256, 512, recipe=recipe).cuda(), tt.Linear(512, 128, recipe=recipe).cuda()
    opt = tt.FusedAdam(list(l1.parameters()) + list(l2.parameters()), lr=2e-3)
    data = torch.Generator(device="cuda").manual_seed(99)
    losses = []
    for _ in range(steps):
        x = torch.randn(1024, 256, device="cuda", generator=data)
        with torch.no_grad():
            target = teacher(x) + 0.2 * torch.randn(1024, 128, device="cuda", generator=data)
        opt.zero_grad(set_to_none=True)
        y = l2(torch.relu(l1(x)))
        loss = (y.float() - target).square().mean()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    # The last 20 steps' mean: one batch's loss is noisy.
    return losses[:1] + [sum(losses[-20:]) / 20]


def test_mlp_with_fp8_recipes_tracks_bf16():
    base = train_mlp("bf16")
    assert base[-1] < 0.5 * base[0], "the BF16 run must learn"
    for recipe in ("fp8_block", "mxfp8"):
        losses = train_mlp(recipe)
        rel = abs(losses[-1] - base[-1]) / base[-1]
        print(f"{recipe}: final loss {losses[-1]:.5f} vs bf16 {base[-1]:.5f} ({100 * rel:.2f} %)")
        assert rel <= 0.05, (recipe, losses[-1], base[-1])


def test_fused_adam_matches_torch_adamw():
    torch.manual_seed(7)
    shapes = [(256, 128), (512,), (33, 65)]
    ours = [torch.randn(*s, device="cuda", requires_grad=True) for s in shapes]
    ref = [p.detach().clone().requires_grad_() for p in ours]
    kw = dict(lr=1e-2, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1)
    opt = tt.FusedAdam(ours, **kw)
    ref_opt = torch.optim.AdamW(ref, **kw)
    for step in range(10):
        grads = [torch.randn(*s, device="cuda") for s in shapes]
        for p, q, g in zip(ours, ref, grads):
            p.grad, q.grad = g.clone(), g.clone()
        opt.step()
        ref_opt.step()
    for p, q in zip(ours, ref):
        torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-6)


def test_fused_adam_replays_from_a_cuda_graph():
    torch.manual_seed(8)
    p = torch.randn(512, 256, device="cuda", requires_grad=True)
    eager = p.detach().clone().requires_grad_()
    opt, eager_opt = tt.FusedAdam([p], lr=1e-3), tt.FusedAdam([eager], lr=1e-3)
    g = torch.randn(512, 256, device="cuda")
    p.grad, eager.grad = g.clone(), g.clone()
    # Warm up (compiles and allocates state) on a side stream, then capture.
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        opt.step()
    torch.cuda.current_stream().wait_stream(s)
    eager_opt.step()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        opt.step()
    for lr in (1e-3, 5e-4, 2e-4):
        opt.set_lr(lr)
        eager_opt.set_lr(lr)
        graph.replay()
        eager_opt.step()
    torch.cuda.synchronize()
    assert torch.equal(p, eager)
    assert opt.param_groups[0]["step_tensor"].item() == 4


@pytest.mark.parametrize("recipe", ["fp8_block", "mxfp8", "nvfp4"])
def test_fused_adam_requantizes_the_linear_weight_bit_for_bit(recipe):
    """With requantize the optimizer writes the layer's stored weight in its
    kernel and the next forward quantizes nothing; the training run is bit
    for bit the one that quantizes in every forward."""
    runs = []
    for requantize in (True, False):
        torch.manual_seed(3)
        layer = tt.Linear(256, 384, recipe=recipe).cuda()
        opt = tt.FusedAdam(layer.parameters(), lr=1e-2, requantize=requantize)
        x, dy = bf16((256, 256), 5), bf16((256, 384), 6, 0.01)
        ys, stored = [], []
        for _ in range(4):
            opt.zero_grad(set_to_none=True)
            y = layer(x)
            y.backward(dy)
            opt.step()
            ys.append(y.detach().clone())
            stored.append(layer._stored is not None)
        runs.append((ys, layer.weight.detach().clone(), stored))
    (ya, wa, sa), (yb, wb, sb) = runs
    assert sa == [True] * 4 and sb == [False] * 4
    for a, b in zip(ya, yb):
        assert torch.equal(a, b)
    assert torch.equal(wa, wb)


def test_delayed_scaling_and_a_recipe_switch_match_the_cpu_session():
    from test_cpu import DELAYED

    m = tejit.compile(DELAYED)
    late = tejit.compile(DELAYED, layer_recipes={"fc1": "mxfp8"})
    gpu, cpu = m.new_session("cuda"), m.new_session("cpu")
    w = np.random.default_rng(5).standard_normal((32, 128)).astype(np.float32)
    gpu.set("w", w)
    cpu.set("w", w)
    for i in range(6):
        if i == 3:
            gpu.switch_module(late)
            cpu.switch_module(late)
        x = bf16((64, 128), 10 + i, scale=float(i + 1))
        y_gpu = gpu.step(x)
        y_cpu = cpu.step(host_bits(x))
        assert y_gpu.shape == (64, 32) and y_cpu.shape == (64, 32)
        for name in ("fc1.input.delayed_scaling", "fc1.weight.delayed_scaling"):
            a, b = gpu.read(name), cpu.read(name)
            for part in ("scale", "amax_history"):
                assert a[part].tobytes() == b[part].tobytes(), (i, name, part)


@pytest.mark.parametrize("recipe", ["bf16", "fp8_block", "nvfp4"])
def test_grouped_linear_trains_each_expert(recipe):
    # tejit.torch.GroupedLinear on CUDA: the forward and the autograd
    # backward (dx, the FP32 master's dW, db) of each expert close to its
    # own torch matmul; the empty expert's gradients and the padding rows are
    # zeros; the split sizes stay on the device.
    torch.manual_seed(5)
    layer = tt.GroupedLinear(3, 256, 128, recipe=recipe).cuda()
    x = bf16((256, 256), 11).requires_grad_()
    splits = torch.tensor([96, 0, 128], dtype=torch.int64, device="cuda")
    y = layer(x, splits)
    dy = bf16((256, 128), 12)
    y.backward(dy)
    tol = {"bf16": 0.02, "fp8_block": 0.1, "nvfp4": 0.35}[recipe]
    w = layer.weight.detach().to(torch.bfloat16).float()
    xf, dyf = x.detach().float(), dy.float()
    row = 0
    for g, rows in enumerate([96, 0, 128]):
        r = slice(row, row + rows)
        if rows:
            for got, want in ((y[r].float(), xf[r] @ w[g].T + layer.bias[g].detach().to(torch.bfloat16).float()),
                              (layer.weight.grad[g], dyf[r].T @ xf[r]),
                              (x.grad[r].float(), dyf[r] @ w[g])):
                assert (got - want).abs().max() <= tol * want.abs().max(), (recipe, g)
            torch.testing.assert_close(layer.bias.grad[g], dyf[r].sum(0), rtol=1e-3, atol=1e-2)
        else:
            assert not layer.weight.grad[g].any() and not layer.bias.grad[g].any()
        row += rows
    assert not y[row:].any() and not x.grad[row:].any(), "padding rows are zeros"


def test_grouped_linear_replays_from_a_cuda_graph_with_new_split_sizes():
    # The split sizes are read by the kernels on the device: a captured
    # forward replays with new ones written into the same tensor.
    torch.manual_seed(6)
    layer = tt.GroupedLinear(4, 256, 128, recipe="fp8_block").cuda().eval()
    x = bf16((512, 256), 13)
    splits = torch.tensor([128, 128, 128, 128], dtype=torch.int64, device="cuda")
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.no_grad(), torch.cuda.stream(s):
        layer(x, splits)  # compiles and allocates on a side stream
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.no_grad(), torch.cuda.graph(graph):
        y = layer(x, splits)
    for new in ([500, 0, 12, 0], [0, 0, 0, 512], [100, 200, 50, 100]):
        splits.copy_(torch.tensor(new, dtype=torch.int64))
        graph.replay()
        with torch.no_grad():
            eager = layer(x, splits.clone())
        torch.cuda.synchronize()
        assert torch.equal(y, eager), new
