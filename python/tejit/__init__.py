"""tejit from Python: compile a te program, call its functions on torch
CUDA tensors (generated kernels, zero-copy, on torch's current stream) or on
NumPy arrays (the CPU backend: the reference numerics, no GPU needed).

    import tejit
    mod = tejit.compile(open("examples/quantize_hybrid.mlir").read())
    q, db = mod.quantize_grad(dy)          # dy: torch.Tensor (cuda) or numpy
    q.rowwise_data, q.rowwise_scale_inv    # views of tejit's buffers
    x = q.dequantize("rowwise")

Functions that share ``te.persistent`` values run in a session
(``mod.session("cuda")`` or ``mod.session("cpu")``), which holds those values
between calls; the module's own calls use one session per backend.
Compiler errors raise :class:`CompileError` with the located diagnostics.
"""

from __future__ import annotations

import os
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from . import _tejit
from ._tejit import CompileError, Error

__all__ = [
    "compile",
    "CompileError",
    "Error",
    "Module",
    "Session",
    "QuantizedTensor",
    "gpu_available",
]

__version__ = "0.1.0"


def gpu_available() -> bool:
    """Whether a CUDA driver and a GPU are present (tejit loads the driver
    lazily: importing tejit never needs one)."""
    return _tejit.gpu_available()


def compile(program: str, target: str = "sm_90a", name: Optional[str] = None,
            layer_recipes: Optional[Dict[str, str]] = None,
            grouped_mxfp8: str = "auto",
            grouped_nvfp4: str = "auto") -> "Module":
    """Compiles te IR text, or the .mlir file at that path, for ``target``.
    ``layer_recipes`` maps layer names (te.linear's ``layer``) to another
    recipe of the module: the module a session switches to when a layer
    changes its recipe mid-training (:meth:`Session.switch_module`).
    ``grouped_mxfp8`` says how a grouped MXFP8 forward GEMM reads its
    operands: ``"auto"`` (the compiler's cost model), ``"direct"`` (the
    generated MXFP8 kernel) or ``"dequantize"`` (to bf16 first).
    ``grouped_nvfp4`` says the same of a grouped NVFP4 forward GEMM, whose
    operands it quantizes per expert: ``"direct"`` has the generated NVFP4
    kernel read their codes, ``"dequantize"`` the bf16 kernel their values.

    Raises :class:`CompileError` whose message holds every diagnostic with
    its ``file:line:col``.
    """
    if "\n" not in program and program.endswith(".mlir") and os.path.isfile(program):
        with open(program, "r", encoding="utf-8") as f:
            text = f.read()
        name = name or program
    else:
        text = program
        name = name or "<tejit.compile>"
    return Module(_tejit.CompiledModule.from_source(
        text, target, name, dict(layer_recipes or {}), grouped_mxfp8,
        grouped_nvfp4))


# -- element types -------------------------------------------------------------

_NUMPY = {
    "f32": np.float32,
    "f16": np.float16,
    "bf16": np.uint16,  # bit patterns: NumPy has no bfloat16
    "e4m3": np.uint8,
    "e5m2": np.uint8,
    "e8m0": np.uint8,
    "e2m1x2": np.uint8,
    "i64": np.int64,
}


def _torch_dtype(name: str):
    import torch

    return {
        "f32": torch.float32,
        "f16": torch.float16,
        "bf16": torch.bfloat16,
        "e4m3": getattr(torch, "float8_e4m3fn", torch.uint8),
        "e5m2": getattr(torch, "float8_e5m2", torch.uint8),
        "e8m0": getattr(torch, "float8_e8m0fnu", torch.uint8),
        "e2m1x2": torch.uint8,
        "i64": torch.int64,
    }[name]


def float_to_bf16_bits(a: np.ndarray) -> np.ndarray:
    """float32 -> bf16 bit patterns (uint16), rounded to nearest even; NaN
    stays a quiet NaN. What te-run does with a float32 .npy for a bf16
    argument."""
    bits = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)
    rounded = (bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))) >> np.uint32(16)
    nan = np.isnan(a)
    out = rounded.astype(np.uint16)
    out[nan] = ((bits[nan] >> np.uint32(16)) | np.uint32(0x40)).astype(np.uint16)
    return out


def bf16_bits_to_float(a: np.ndarray) -> np.ndarray:
    """bf16 bit patterns (uint16) -> float32, exactly."""
    return (np.asarray(a, dtype=np.uint16).astype(np.uint32) << np.uint32(16)).view(np.float32)


def _is_torch(x: Any) -> bool:
    return type(x).__module__.startswith("torch")


# -- quantized values -------------------------------------------------------------


class QuantizedTensor:
    """A quantized value as tejit stores it: per held direction its data,
    scale inverses and amax, each a torch tensor (CUDA) or NumPy array (CPU)
    that IS tejit's buffer (no copy). ``parts`` maps "rowwise.data",
    "columnwise.scale_inv", ... to them; layouts are docs/Numerics.md §2's.
    """

    def __init__(self, module: "Module", info: Dict[str, Any], parts: Dict[str, Any], device: str):
        self._module = module
        self._info = info
        self.parts = parts
        self.device = device
        self.shape = tuple(info["shape"])
        self.dtype = info["dtype"]  # the high-precision element type
        self.type = info["type"]  # the !te.qtensor type as written in IR

    def _part(self, name: str):
        return self.parts.get(name)

    rowwise_data = property(lambda self: self._part("rowwise.data"))
    rowwise_scale_inv = property(lambda self: self._part("rowwise.scale_inv"))
    rowwise_amax = property(lambda self: self._part("rowwise.amax"))
    columnwise_data = property(lambda self: self._part("columnwise.data"))
    columnwise_scale_inv = property(lambda self: self._part("columnwise.scale_inv"))
    columnwise_amax = property(lambda self: self._part("columnwise.amax"))

    @property
    def directions(self) -> List[str]:
        return [d for d in ("rowwise", "columnwise") if f"{d}.data" in self.parts]

    def dequantize(self, direction: Optional[str] = None):
        """The logical values of one held direction (default: the first),
        computed by a compiled ``te.dequantize`` on this tensor's backend,
        as a tensor of the high-precision element type."""
        direction = direction or self.directions[0]
        if direction not in self.directions:
            raise Error(f"the tensor holds {self.directions}, not {direction}")
        return _dequantizer(self._module, self.type, self.shape, self.dtype, direction).run(self)

    def __repr__(self) -> str:
        return f"QuantizedTensor({self.type}, device={self.device})"


_DEQUANTIZERS: Dict[Tuple[str, str, str, str], "_Dequantizer"] = {}


class _Dequantizer:
    """A te.dequantize program for one quantized type and direction, its
    input a persistent value set from the tensor's buffers."""

    def __init__(self, arch: str, qtype: str, shape: Tuple[int, ...], dtype: str, direction: str):
        dims = "x".join(str(d) for d in shape)
        out = f"tensor<{dims}x{dtype}>"
        text = (
            f'func.func @dequantize(%q: {qtype} {{te.persistent = "q"}}) -> {out} {{\n'
            f"  %d = te.dequantize %q {direction} : {qtype} -> {out}\n"
            f"  return %d : {out}\n}}\n"
        )
        self.module = compile(text, arch, "<tejit.dequantize>")

    def run(self, q: QuantizedTensor):
        session = self.module.session(q.device)
        session._set_quantized("q", q)
        return session.dequantize()


def _dequantizer(module: "Module", qtype, shape, dtype, direction) -> _Dequantizer:
    key = (module.arch, qtype, dtype, direction)
    if key not in _DEQUANTIZERS:
        _DEQUANTIZERS[key] = _Dequantizer(module.arch, qtype, shape, dtype, direction)
    return _DEQUANTIZERS[key]


# -- modules, sessions, entries ----------------------------------------------------------


class Module:
    """A compiled te module. Its functions are attributes; each call runs in
    the module's session for the backend of its arguments (torch CUDA
    tensors: the GPU; NumPy arrays: the CPU backend)."""

    def __init__(self, compiled):
        self._compiled = compiled
        self.arch = compiled.arch()
        self.functions: List[str] = compiled.functions()
        self._describe: Dict[str, Dict[str, Any]] = {}
        self._sessions: Dict[str, Session] = {}

    def describe(self, function: str) -> Dict[str, Any]:
        """The signature of ``function``: arguments and results with shapes,
        element types, persistent names and storage parts."""
        if function not in self._describe:
            self._describe[function] = self._compiled.describe(function)
        return self._describe[function]

    def session(self, device: str = "cuda") -> "Session":
        """The module's session on ``device`` ("cuda" or "cpu"): created on
        first use, shared by every call of the module on that backend."""
        if device not in self._sessions:
            self._sessions[device] = Session(self, device)
        return self._sessions[device]

    def new_session(self, device: str = "cuda") -> "Session":
        """A session of its own (its own persistent values)."""
        return Session(self, device)

    def __getattr__(self, name: str):
        if name.startswith("_") or name not in self.__dict__.get("functions", ()):
            raise AttributeError(name)
        return _ModuleEntry(self, name)

    def __dir__(self):
        return list(super().__dir__()) + list(self.functions)


class _ModuleEntry:
    def __init__(self, module: Module, name: str):
        self.module = module
        self.name = name

    def __call__(self, *args):
        device = "cpu"
        if any(_is_torch(a) and a.is_cuda for a in args):
            device = "cuda"
        elif not args and gpu_available():
            device = "cuda"
        return getattr(self.module.session(device), self.name)(*args)


class Session:
    """Every function of a module on one backend, sharing the module's
    persistent values (te.persistent: master weights, moments, quantized
    weights), which the session holds between calls. A function takes and
    returns only its other arguments and results."""

    def __init__(self, module: Module, device: str = "cuda"):
        if device not in ("cuda", "cpu"):
            raise Error(f"device must be 'cuda' or 'cpu', not {device!r}")
        self.module = module
        self.device = device
        if device == "cuda":
            self._s = _tejit.Session.create(module._compiled)
        else:
            self._s = _tejit.HostSession.create(module._compiled)
        self._entries: Dict[str, _Entry] = {}

    def persistent_names(self) -> List[str]:
        return list(self._s.persistent_names())

    def holds(self, name: str) -> bool:
        return self._s.holds(name)

    def set(self, name: str, value) -> None:
        """Gives persistent tensor ``name`` its value (a torch tensor or a
        NumPy array of its shape and element type; bf16 as torch.bfloat16,
        or NumPy uint16 bit patterns / float32 rounded to nearest even)."""
        info = self._persistent_info(name)
        host = _host_array(value, info)
        if self.device == "cuda":
            self._s.set(name, host, _current_stream())
        else:
            self._s.set(name, host)

    def read(self, name: str):
        """Persistent value ``name`` as a host copy (NumPy): a tensor, or a
        dict of parts for a quantized value or a delayed-scaling state
        ("scale" and "amax_history", float32)."""
        info = self._persistent_info(name, states=True)
        if self.device == "cuda":
            parts = dict(self._s.read(name, _current_stream()))
        else:
            parts = dict(self._s.read(name))
        if info is None:
            return {p: np.asarray(a).view(np.float32).copy() for p, a in parts.items()}
        if not info["quantized"]:
            return _shape(parts["data"], info["dtype"], info["shape"])
        return {p: _shape(parts[p], d, (r, c)) for p, d, r, c in info["parts"]}

    def buffers(self, name: str):
        """CUDA: persistent value ``name``'s device buffers as torch tensors
        that alias them (no copy): a tensor, or a QuantizedTensor."""
        if self.device != "cuda":
            raise Error("buffers() is the CUDA session's; use read() on the CPU")
        info = self._persistent_info(name)
        spans = {p: (ptr, n) for p, ptr, n in self._s.buffers(name)}
        if not info["quantized"]:
            ptr, n = spans["data"]
            return _torch_view(ptr, n, info["dtype"], info["shape"], self._s)
        parts = {p: _torch_view(spans[p][0], spans[p][1], d, (r, c), self._s) for p, d, r, c in info["parts"]}
        return QuantizedTensor(self.module, info, parts, "cuda")

    def _set_quantized(self, name: str, q: QuantizedTensor) -> None:
        if self.device == "cpu":
            self._s.set_parts(name, [(p, np.ascontiguousarray(a).view(np.uint8).reshape(-1))
                                     for p, a in q.parts.items()])
            return
        parts = []
        for p, t in q.parts.items():
            parts.append((p, t.data_ptr(), t.numel() * t.element_size()))
        self._s.set_from_device(name, parts, _current_stream())

    def switch_module(self, module: "Module") -> None:
        """Goes on with ``module``: this session's module compiled with other
        layer recipes (``compile(..., layer_recipes=...)``). Persistent
        values stay; a quantized one stored in a new format is re-quantized
        from its FP32 master, a delayed-scaling state of another scheme
        starts afresh (docs/Guide.md §7.2). Functions taken from the session
        before follow the new module."""
        if self.device == "cuda":
            self._s.switch_module(module._compiled, _current_stream())
        else:
            self._s.switch_module(module._compiled)
        self.module = module
        for entry in self._entries.values():
            entry._refresh()

    def _persistent_info(self, name: str, states: bool = False):
        for fn in self.module.functions:
            d = self.module.describe(fn)
            for v in d["arguments"] + d["results"]:
                if v["persistent"] == name:
                    return v
        # A delayed-scaling state: listed by the session, in no signature.
        if states and name in self.persistent_names():
            return None
        raise Error(f"no persistent value '{name}' in the module")

    def __getattr__(self, name: str):
        if name.startswith("_") or name not in self.module.functions:
            raise AttributeError(name)
        if name not in self._entries:
            self._entries[name] = _Entry(self, name)
        return self._entries[name]


def _current_stream() -> int:
    try:
        import torch

        if torch.cuda.is_available():
            return torch.cuda.current_stream().cuda_stream
    except ImportError:
        pass
    return 0


def _torch_view(ptr: int, nbytes: int, dtype: str, shape, owner):
    """A torch tensor aliasing device memory tejit owns (through DLPack),
    keeping ``owner`` (the session holding the memory) alive."""
    import torch

    t = _tejit.device_array(ptr, nbytes, torch.cuda.current_device(), owner)
    t = t.view(_torch_dtype(dtype))
    return t.view(*shape) if shape else t.view(())


def _shape(raw: np.ndarray, dtype: str, shape):
    return raw.view(_NUMPY[dtype]).reshape(tuple(shape))


def _host_array(value, info) -> np.ndarray:
    """``value`` as a C-contiguous NumPy array of the argument's bytes."""
    dtype, shape = info["dtype"], tuple(info["shape"])
    if _is_torch(value):
        import torch

        t = value.detach().contiguous().cpu()
        if t.dtype == torch.bfloat16:
            t = t.view(torch.uint16) if hasattr(torch, "uint16") else t.view(torch.int16)
        a = t.numpy()
    else:
        a = np.asarray(value)
    if dtype == "bf16" and a.dtype == np.float32:
        a = float_to_bf16_bits(a)
    want = np.dtype(_NUMPY[dtype])
    if a.dtype.itemsize != want.itemsize or (a.dtype.kind != want.kind and dtype != "bf16"):
        raise Error(f"'{info['name']}' is {dtype}{list(shape)}, got an array of {a.dtype}")
    if tuple(a.shape) != shape:
        raise Error(f"'{info['name']}' has shape {list(shape)}, got {list(a.shape)}")
    return np.ascontiguousarray(a)


class _Entry:
    """One function of a session, callable."""

    def __init__(self, session: Session, name: str):
        self.session = session
        self.name = name
        self._refresh()

    def _refresh(self) -> None:
        """Everything taken from the session's module (again after
        Session.switch_module)."""
        session, name = self.session, self.name
        d = session.module.describe(name)
        self.arguments = [a for a in d["arguments"] if not a["persistent"]]
        self.results = [r for r in d["results"] if not r["persistent"]]
        self.result_index = [i for i, r in enumerate(d["results"]) if not r["persistent"]]
        self._cuda = session.device == "cuda"
        if self._cuda:
            self._prepare_cuda()

    def _prepare_cuda(self) -> None:
        """Everything a CUDA call needs that does not change between calls,
        worked out once: the per-call cost is the host overhead users see."""
        import torch

        self._torch = torch
        self._exe = self.session._s.function(self.name)
        self._result_slots = self._exe.results()
        self._arg_bytes = [s[6] for s in self._exe.arguments()]
        if len(self._arg_bytes) != len(self.arguments):
            raise Error(f"{self.name}: a quantized argument must be a persistent value (te.persistent)")
        self._arg_checks = [(_torch_dtype(a["dtype"]), tuple(a["shape"])) for a in self.arguments]
        self._device = torch.device("cuda", torch.cuda.current_device())
        # torch's current stream as a raw CUstream. current_stream() builds a
        # Stream object per call (microseconds); the raw getter does not.
        raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
        index = self._device.index
        self._stream = ((lambda: raw(index)) if raw is not None
                        else (lambda: torch.cuda.current_stream().cuda_stream))
        # A tensor result is allocated in its own shape (no view per call).
        shapes = {(s[1], "data"): None for s in self._result_slots}
        d = self.session.module.describe(self.name)
        for i, info in enumerate(d["results"]):
            if not info["quantized"]:
                shapes[(i, "data")] = tuple(info["shape"])
        # torch.empty's size arguments, as separate ints: torch.empty(128,
        # 256) parses 1.1 us faster than torch.empty((128, 256)) (H100 host,
        # docs/Performance.md); a scalar's is the empty tuple.
        def sizes(slot):
            shape = shapes.get((slot[1], slot[2]))
            shape = (slot[4], slot[5]) if shape is None else shape
            return shape if shape else ((),)
        self._result_alloc = [(sizes(s), _torch_dtype(s[3])) for s in self._result_slots]
        self._result_bytes = [s[6] for s in self._result_slots]
        # How the results are put together from the slots: a tensor is one
        # slot reshaped, a quantized value a QuantizedTensor of its slots.
        slot_of = {(s[1], s[2]): i for i, s in enumerate(self._result_slots)}
        self._assembly = []
        for i in self.result_index:
            info = d["results"][i]
            if not info["quantized"]:
                self._assembly.append((False, slot_of[(i, "data")], tuple(info["shape"]), info))
            else:
                parts = [(p, slot_of[(i, p)], (r, c)) for p, _, r, c in info["parts"]]
                self._assembly.append((True, parts, None, info))
        # Only tensors, one slot each, in order: the buffers are the results.
        self._plain = all(not q and where == n for n, (q, where, _, _) in enumerate(self._assembly)) \
            and len(self._assembly) == len(self._result_slots)
        self._call_cuda = self._make_cuda_call()

    def __call__(self, *args):
        if self._cuda:
            out = self._call_cuda(args)
        else:
            if len(args) != len(self.arguments):
                raise Error(f"{self.name} takes {len(self.arguments)} argument(s), got {len(args)}")
            out = self._call_cpu(args)
        return out[0] if len(out) == 1 else tuple(out)

    def result_slots(self):
        """CUDA: the result buffers a call writes, in order: (name, result
        index, part, element type, rows, cols, bytes)."""
        return self._result_slots

    def call_into(self, args, outs) -> None:
        """CUDA: runs with ``outs`` (torch tensors, one per result slot in
        order) as the result buffers: e.g. the arguments themselves, for an
        update in place (an optimizer step)."""
        if self.session.device != "cuda":
            raise Error("call_into runs on the CUDA backend")
        ptrs, sizes = self._argument_pointers(args), self._arg_bytes
        if len(outs) != len(self._result_slots):
            raise Error(f"{self.name} writes {len(self._result_slots)} buffers, got {len(outs)}")
        rptrs = []
        for t, slot in zip(outs, self._result_slots):
            if not t.is_cuda or t.numel() * t.element_size() < slot[6] or not t.is_contiguous():
                raise Error(f"{self.name}: {slot[0]} needs a contiguous CUDA buffer of {slot[6]} bytes")
            rptrs.append(t.data_ptr())
        rsizes = self._result_bytes
        self._exe.run(ptrs, sizes, rptrs, rsizes, self._stream())

    # CPU: bytes in, NumPy arrays out (each owning its buffer).
    def _call_cpu(self, args):
        arrays = [_host_array(a, info) for a, info in zip(args, self.arguments)]
        buffers = self.session._s.call(self.name, arrays)
        return self._assemble(buffers, lambda raw, d, shape: _shape(raw, d, shape), "cpu")

    # CUDA: the kernels read the torch tensors' memory and write into
    # tensors allocated here, on torch's current stream.
    def _argument_pointers(self, args):
        """The device pointers of ``args``, each checked against its
        argument: a contiguous tensor on the session's GPU, of its dtype and
        shape."""
        tensor, index = self._torch.Tensor, self._device.index
        if len(args) == len(self._arg_checks):
            ptrs = []
            for a, (dtype, shape) in zip(args, self._arg_checks):
                if not (isinstance(a, tensor) and a.get_device() == index and a.dtype == dtype
                        and a.shape == shape and a.is_contiguous()):
                    break
                ptrs.append(a.data_ptr())
            else:
                return ptrs
        raise self._argument_error(args)

    def _argument_error(self, args) -> Error:
        if len(args) != len(self.arguments):
            return Error(f"{self.name} takes {len(self.arguments)} argument(s), got {len(args)}")
        for n, (a, info) in enumerate(zip(args, self.arguments)):
            if not _is_torch(a) or a.device != self._device or a.dtype != self._arg_checks[n][0] \
                    or a.shape != self._arg_checks[n][1] or not a.is_contiguous():
                got = f"{a.dtype}{list(a.shape)} on {a.device}" if _is_torch(a) else type(a).__name__
                return Error(
                    f"{self.name}: argument '{info['name']}' must be a contiguous tensor of "
                    f"{info['dtype']}{list(info['shape'])} on {self._device}, got {got}")
        return Error(f"{self.name}: arguments rejected")

    def _make_cuda_call(self):
        """The CUDA call as one closure over everything that is fixed between
        calls (no attribute lookups per call): its cost is the host overhead
        users see (bench/python_overhead.py). The kernels read the argument
        tensors' memory and write into tensors allocated here, on torch's
        current stream."""
        pointers, run, stream = self._argument_pointers, self._exe.run, self._stream
        empty, device = self._torch.empty, self._device
        arg_bytes, result_bytes = self._arg_bytes, self._result_bytes
        alloc = self._result_alloc

        if len(alloc) == 1:
            ((shape, dtype),) = alloc

            def call(args):
                ptrs = pointers(args)
                t = empty(*shape, dtype=dtype, device=device)
                run(ptrs, arg_bytes, [t.data_ptr()], result_bytes, stream())
                return [t]
        else:
            def call(args):
                ptrs = pointers(args)
                outs = [empty(*s, dtype=d, device=device) for s, d in alloc]
                run(ptrs, arg_bytes, [t.data_ptr() for t in outs], result_bytes, stream())
                return outs
        if self._plain:
            return call
        module, assembly = self.session.module, self._assembly

        def assemble(args):
            outs = call(args)
            results = []
            for quantized, where, _, info in assembly:
                if not quantized:
                    results.append(outs[where])
                else:
                    views = {p: outs[i] for p, i, _ in where}
                    results.append(QuantizedTensor(module, info, views, "cuda"))
            return results
        return assemble

    def _assemble(self, buffers, shape_fn, device):
        by_result: Dict[int, Dict[str, Any]] = {}
        for name, index, part, dtype, rows, cols, raw in buffers:
            by_result.setdefault(index, {})[part] = (raw, dtype, rows, cols)
        out = []
        d = self.session.module.describe(self.name)
        for i in self.result_index:
            info = d["results"][i]
            parts = by_result.get(i, {})
            if not info["quantized"]:
                raw, dtype, _, _ = parts["data"]
                out.append(shape_fn(raw, dtype, tuple(info["shape"])))
            else:
                views = {p: shape_fn(raw, dt, (r, c)) for p, (raw, dt, r, c) in parts.items()}
                out.append(QuantizedTensor(self.session.module, info, views, device))
        return out
