//===- TejitModule.cpp - tejit._tejit, the Python bindings ----------------===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// The C++ half of the Python package: thin nanobind wrappers over the host
// API (te/api/Tejit.h, libtejit.so). Shapes, dtypes and the torch / NumPy
// objects live in the Python half (tejit/__init__.py); this file moves
// pointers, bytes and errors across. Every te::rt::Status that is not ok
// becomes a Python exception (tejit.Error, or tejit.CompileError carrying
// the compiler's located diagnostics).
//
//===----------------------------------------------------------------------===//

#include "te/api/Tejit.h"

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <mutex>
#include <stdexcept>

namespace nb = nanobind;
using namespace te;

namespace {

/// Raised as tejit.Error (a RuntimeError).
struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};
/// Raised as tejit.CompileError (a ValueError): parse and verifier errors
/// with their file:line:col.
struct CompileError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

void check(const rt::Status &s) {
  if (!s.isOk())
    throw Error(s.message());
}
template <typename T> T take(rt::Expected<T> e) {
  if (!e)
    throw Error(e.status().message());
  return std::move(*e);
}

/// The GPU every session of this process uses, with the kernel cache:
/// opened on first use, so importing tejit needs no driver.
struct Gpu {
  rt::Device device;
  rt::KernelCache cache;
};
Gpu &gpu() {
  static std::unique_ptr<Gpu> g;
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  if (!g) {
    rt::Expected<rt::Device> d = rt::Device::open();
    if (!d)
      throw Error(d.status().message());
    g.reset(new Gpu{std::move(*d), rt::KernelCache()});
  }
  return *g;
}

nb::dict describeValue(const cg::Value &v, const std::string &persistent,
                       const rt::Target &target) {
  nb::dict d;
  d["name"] = v.name;
  d["shape"] = nb::tuple(nb::cast(v.shape));
  d["dtype"] = rt::dtypeName(v.dtype);
  d["quantized"] = v.isQuantized();
  d["persistent"] = persistent;
  d["type"] = v.type;
  nb::list parts;
  if (!v.isQuantized()) {
    parts.append(
        nb::make_tuple("data", rt::dtypeName(v.dtype), v.rows(), v.cols()));
  } else {
    for (rt::Direction dir :
         {rt::Direction::Rowwise, rt::Direction::Columnwise}) {
      if (!v.scheme(dir))
        continue;
      rt::DirectionStorage st = cg::directionStorage(v, dir, target);
      std::string prefix = std::string(rt::directionName(dir)) + ".";
      for (auto [name, desc] :
           {std::pair<const char *, rt::BufferDesc *>{"data", &st.data},
            {"scale_inv", &st.scaleInv},
            {"amax", &st.amax}})
        if (desc->present())
          parts.append(nb::make_tuple(prefix + name, rt::dtypeName(desc->dtype),
                                      desc->rows, desc->cols));
    }
  }
  d["parts"] = parts;
  return d;
}

/// An entry's signature: its arguments and results with shapes, element
/// types, persistent names and (for quantized values) storage parts.
nb::dict describeEntry(const api::CompiledModule &m, const std::string &fn) {
  const cg::Entry *e = m.program().find(fn);
  if (!e)
    throw Error("no function '" + fn + "' in the module");
  nb::list args, results;
  for (size_t i = 0; i < e->args.size(); ++i)
    args.append(describeValue(e->values[e->args[i]], e->persistentArg(i),
                              m.program().target));
  for (size_t i = 0; i < e->results.size(); ++i)
    results.append(describeValue(e->values[e->results[i]],
                                 e->persistentResult(i), m.program().target));
  nb::dict d;
  d["name"] = e->name;
  d["arguments"] = args;
  d["results"] = results;
  d["kernels"] = e->kernels.size();
  return d;
}

/// Bytes of a C-contiguous host array (NumPy, or anything with the buffer
/// protocol / DLPack on the CPU).
std::vector<uint8_t>
hostBytes(const nb::ndarray<nb::device::cpu, nb::c_contig> &a) {
  const auto *p = static_cast<const uint8_t *>(a.data());
  return std::vector<uint8_t>(p, p + a.nbytes());
}

/// A result buffer as a NumPy uint8 array that owns the bytes (no copy).
nb::object ownedArray(std::vector<uint8_t> bytes) {
  auto *held = new std::vector<uint8_t>(std::move(bytes));
  nb::capsule owner(held, [](void *p) noexcept {
    delete static_cast<std::vector<uint8_t> *>(p);
  });
  size_t shape[1] = {held->size()};
  return nb::cast(nb::ndarray<nb::numpy, uint8_t, nb::ndim<1>>(held->data(), 1,
                                                               shape, owner));
}

nb::list hostResults(std::vector<api::HostBuffer> buffers) {
  nb::list out;
  for (api::HostBuffer &b : buffers)
    out.append(nb::make_tuple(b.name, b.index, b.part,
                              rt::dtypeName(b.desc.dtype), b.desc.rows,
                              b.desc.cols, ownedArray(std::move(b.bytes))));
  return out;
}

using HostArrays = std::vector<nb::ndarray<nb::device::cpu, nb::c_contig>>;

/// Runs a CPU-backend call on the arrays' bytes without the GIL (the
/// reference numerics take a while) and returns its result buffers.
template <typename Call>
nb::list callOnHost(const HostArrays &args, Call call) {
  std::vector<std::vector<uint8_t>> bytes;
  for (const auto &a : args)
    bytes.push_back(hostBytes(a));
  std::vector<api::HostBuffer> out;
  {
    nb::gil_scoped_release release;
    out = take(call(bytes));
  }
  return hostResults(std::move(out));
}

nb::list slots(const std::vector<api::Slot> &s) {
  nb::list out;
  for (const api::Slot &slot : s)
    out.append(nb::make_tuple(slot.name, slot.index, slot.part,
                              rt::dtypeName(slot.desc.dtype), slot.desc.rows,
                              slot.desc.cols, slot.bytes));
  return out;
}

std::vector<api::DeviceSpan> spans(const std::vector<uint64_t> &ptrs,
                                   const std::vector<uint64_t> &bytes) {
  if (ptrs.size() != bytes.size())
    throw Error("pointer and size lists differ in length");
  std::vector<api::DeviceSpan> out(ptrs.size());
  for (size_t i = 0; i < ptrs.size(); ++i)
    out[i] = {ptrs[i], bytes[i]};
  return out;
}

/// One device call's buffers and stream, from the Python side's pointer and
/// size lists and CUstream handle, with the process's GPU made current.
struct DeviceCall {
  std::vector<api::DeviceSpan> args, results;
  rt::Stream stream;
};
DeviceCall deviceCall(const std::vector<uint64_t> &argPtrs,
                      const std::vector<uint64_t> &argBytes,
                      const std::vector<uint64_t> &resultPtrs,
                      const std::vector<uint64_t> &resultBytes,
                      uint64_t stream) {
  DeviceCall c{spans(argPtrs, argBytes), spans(resultPtrs, resultBytes),
               rt::Stream::borrow(reinterpret_cast<void *>(stream))};
  check(gpu().device.makeCurrent());
  return c;
}

/// A GPU session with the module it runs (kept alive with it).
struct GpuSession {
  std::shared_ptr<api::CompiledModule> module;
  api::Session session;
};

} // namespace

NB_MODULE(_tejit, m) {
  m.doc() = "tejit's C++ host API (use the tejit package, not this module)";
  nb::exception<Error>(m, "Error", PyExc_RuntimeError);
  nb::exception<CompileError>(m, "CompileError", PyExc_ValueError);

  nb::class_<api::CompiledModule>(m, "CompiledModule")
      .def_static(
          "from_source",
          [](const std::string &text, const std::string &arch,
             const std::string &name,
             const std::map<std::string, std::string> &layerRecipes,
             const std::string &groupedMxfp8, const std::string &groupedNvfp4) {
            api::CompileOptions opts;
            opts.arch = arch;
            opts.layerRecipes = layerRecipes;
            opts.groupedMxfp8 = groupedMxfp8;
            opts.groupedNvfp4 = groupedNvfp4;
            rt::Expected<api::CompiledModule> c =
                api::CompiledModule::fromSource(text, opts, name);
            if (!c)
              throw CompileError(c.status().message());
            return std::make_shared<api::CompiledModule>(std::move(*c));
          },
          nb::arg("text"), nb::arg("arch"), nb::arg("name"),
          nb::arg("layer_recipes") = std::map<std::string, std::string>(),
          nb::arg("grouped_mxfp8") = "auto", nb::arg("grouped_nvfp4") = "auto")
      .def("functions", &api::CompiledModule::functionNames)
      .def("arch",
           [](const api::CompiledModule &c) { return c.program().arch; })
      .def("describe", &describeEntry)
      .def("run_on_cpu", [](const api::CompiledModule &c, const std::string &fn,
                            const HostArrays &args) {
        return callOnHost(
            args, [&](const auto &bytes) { return c.runOnCpu(fn, bytes); });
      });

  nb::class_<api::HostSession>(m, "HostSession")
      .def_static("create",
                  [](std::shared_ptr<api::CompiledModule> c) {
                    return take(api::HostSession::create(*c));
                  })
      .def("call",
           [](api::HostSession &s, const std::string &fn,
              const HostArrays &args) {
             return callOnHost(
                 args, [&](const auto &bytes) { return s.call(fn, bytes); });
           })
      .def("persistent_names", &api::HostSession::persistentNames)
      .def("set",
           [](api::HostSession &s, const std::string &name,
              nb::ndarray<nb::device::cpu, nb::c_contig> a) {
             check(s.set(name, a.data(), a.nbytes()));
           })
      .def("set_parts",
           [](api::HostSession &s, const std::string &name,
              std::vector<std::pair<std::string,
                                    nb::ndarray<nb::device::cpu, nb::c_contig>>>
                  parts) {
             std::vector<std::pair<std::string, std::vector<uint8_t>>> p;
             for (auto &[part, a] : parts)
               p.push_back({part, hostBytes(a)});
             check(s.setParts(name, p));
           })
      .def("read",
           [](const api::HostSession &s, const std::string &name) {
             nb::list out;
             for (auto &[part, bytes] : take(s.read(name)))
               out.append(nb::make_tuple(part, ownedArray(std::move(bytes))));
             return out;
           })
      .def("holds", &api::HostSession::holds)
      .def("switch_module",
           [](api::HostSession &s, std::shared_ptr<api::CompiledModule> c) {
             check(s.switchModule(*c));
           });

  nb::class_<api::Executable>(m, "Executable")
      .def("name", &api::Executable::name)
      .def("arguments",
           [](const api::Executable &e) { return slots(e.arguments()); })
      .def("results",
           [](const api::Executable &e) { return slots(e.results()); })
      .def("num_kernels", &api::Executable::numKernels)
      .def(
          "run",
          [](api::Executable &e, const std::vector<uint64_t> &argPtrs,
             const std::vector<uint64_t> &argBytes,
             const std::vector<uint64_t> &resultPtrs,
             const std::vector<uint64_t> &resultBytes, uint64_t stream) {
            DeviceCall c =
                deviceCall(argPtrs, argBytes, resultPtrs, resultBytes, stream);
            check(e.run(c.args, c.results, c.stream));
          },
          "Enqueues the function on CUDA stream `stream` (a CUstream handle, "
          "e.g. torch.cuda.current_stream().cuda_stream) with the given "
          "device buffers (pointers and byte sizes, one per slot).")
      .def(
          "time_runs",
          [](api::Executable &e, const std::vector<uint64_t> &argPtrs,
             const std::vector<uint64_t> &argBytes,
             const std::vector<uint64_t> &resultPtrs,
             const std::vector<uint64_t> &resultBytes, uint64_t stream,
             int calls) {
            DeviceCall c =
                deviceCall(argPtrs, argBytes, resultPtrs, resultBytes, stream);
            nb::gil_scoped_release release;
            auto t0 = std::chrono::steady_clock::now();
            for (int i = 0; i < calls; ++i)
              check(e.run(c.args, c.results, c.stream));
            return std::chrono::duration<double>(
                       std::chrono::steady_clock::now() - t0)
                .count();
          },
          "Host seconds of `calls` back-to-back runs through the C++ API "
          "alone (as te-api-overhead times them), in this process and on "
          "`stream`: the baseline bench/python_overhead.py compares Python "
          "calls against.");

  nb::class_<GpuSession>(m, "Session")
      .def_static("create",
                  [](std::shared_ptr<api::CompiledModule> c) {
                    Gpu &g = gpu();
                    return std::make_unique<GpuSession>(GpuSession{
                        c, take(api::Session::create(*c, g.device, g.cache))});
                  })
      .def(
          "function",
          [](GpuSession &s, const std::string &name) {
            api::Executable *e = s.session.function(name);
            if (!e)
              throw Error("no function '" + name + "' in the module");
            return e;
          },
          nb::rv_policy::reference_internal)
      .def("persistent_names",
           [](const GpuSession &s) { return s.session.persistentNames(); })
      .def("buffers",
           [](const GpuSession &s, const std::string &name) {
             nb::list out;
             for (auto &[part, span] : s.session.buffers(name))
               out.append(nb::make_tuple(part, span.ptr, span.bytes));
             return out;
           })
      .def("set",
           [](GpuSession &s, const std::string &name,
              nb::ndarray<nb::device::cpu, nb::c_contig> a, uint64_t stream) {
             rt::Stream st =
                 rt::Stream::borrow(reinterpret_cast<void *>(stream));
             check(s.session.set(name, a.data(), a.nbytes(), st));
           })
      .def("set_from_device",
           [](GpuSession &s, const std::string &name,
              const std::vector<std::tuple<std::string, uint64_t, uint64_t>>
                  &parts,
              uint64_t stream) {
             std::vector<std::pair<std::string, api::DeviceSpan>> p;
             for (auto &[part, ptr, bytes] : parts)
               p.push_back({part, {ptr, bytes}});
             rt::Stream st =
                 rt::Stream::borrow(reinterpret_cast<void *>(stream));
             check(s.session.setFromDevice(name, p, st));
           })
      .def("read",
           [](const GpuSession &s, const std::string &name, uint64_t stream) {
             rt::Stream st =
                 rt::Stream::borrow(reinterpret_cast<void *>(stream));
             nb::list out;
             for (auto &[part, bytes] : take(s.session.read(name, st)))
               out.append(nb::make_tuple(part, ownedArray(std::move(bytes))));
             return out;
           })
      .def("holds",
           [](const GpuSession &s, const std::string &name) {
             return s.session.holds(name);
           })
      .def("switch_module",
           [](GpuSession &s, std::shared_ptr<api::CompiledModule> c,
              uint64_t stream) {
             rt::Stream st =
                 rt::Stream::borrow(reinterpret_cast<void *>(stream));
             check(s.session.switchModule(*c, st));
             s.module = std::move(c);
           });

  m.def(
      "device_array",
      [](uint64_t ptr, size_t bytes, int device, nb::handle owner) {
        size_t shape[1] = {bytes};
        return nb::ndarray<nb::pytorch, uint8_t, nb::ndim<1>>(
            reinterpret_cast<void *>(ptr), 1, shape, owner, nullptr,
            nb::dtype<uint8_t>(), nb::device::cuda::value, device);
      },
      nb::arg("ptr"), nb::arg("bytes"), nb::arg("device"), nb::arg("owner"),
      "A torch tensor (through DLPack) aliasing `bytes` bytes of device "
      "memory at `ptr`, keeping `owner` alive while it lives.");
  m.def("gpu_available", [] {
    rt::Expected<int> n = rt::Device::count();
    return n && *n > 0;
  });
  m.def("gpu_arch", [] { return gpu().device.info().arch(); });
}
