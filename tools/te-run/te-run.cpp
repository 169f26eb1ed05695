//===- te-run.cpp - Compile, run, check and time a te program -------------===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// te-run FILE.mlir [--entry NAME[,NAME...]] [--backend cuda|cpu|both]
//        [--input NAME=FILE.npy]... [--random-inputs SEED] [--dump DIR]
//        [--check] [--bench N] [--steps N] [--arch sm_90a] [--cache-dir DIR]
//
// Parses FILE, runs the te-to-cuda pipeline, lowers the entry to the kernel
// level, then runs it on the CUDA backend (generated kernels, NVRTC, the
// kernel cache), the CPU backend (reference numerics) or both. Without a
// GPU it still JIT-compiles every kernel and runs the CPU backend.
// Several entries run as one session, in order: persistent values
// (te.persistent) carry from call to call on both backends.
// Bad input gets one line on stderr and exit code 1.
//
//===----------------------------------------------------------------------===//

#include "Npy.h"

#include "codegen/lower/LowerToProgram.h"
#include "dialect/te/TeDialect.h"
#include "te/codegen/Execute.h"
#include "te/runtime/reference/Codecs.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <optional>
#include <set>

namespace cl = llvm::cl;
namespace cg = te::cg;
namespace rt = te::rt;

static cl::opt<std::string> inputFile(cl::Positional, cl::desc("<file.mlir>"),
                                      cl::Required);
static cl::opt<std::string>
    entryName("entry",
              cl::desc("Function to run, or a comma-separated sequence run "
                       "as one session (persistent values carried)"),
              cl::init(""));
static cl::opt<std::string> backend("backend",
                                    cl::desc("cuda | cpu | both (default: "
                                             "cuda if a GPU is present)"),
                                    cl::init(""));
static cl::list<std::string>
    inputs("input", cl::desc("NAME=FILE.npy for argument NAME (arg0, arg1, "
                             "... or 0, 1, ...; ENTRY.argN in a sequence) or "
                             "for a persistent value's initial data"));
static cl::opt<int64_t> randomSeed("random-inputs",
                                   cl::desc("Seeded random data for arguments "
                                            "without --input"),
                                   cl::init(-1));
static cl::opt<std::string> dumpDir("dump", cl::desc("Write results as .npy"),
                                    cl::init(""));
static cl::opt<bool>
    check("check", cl::desc("Run CUDA and CPU and compare bit for bit"));
static cl::opt<int> benchRuns("bench", cl::desc("Time each kernel N times"),
                              cl::init(0));
static cl::opt<std::string> arch("arch", cl::desc("Target architecture"),
                                 cl::init("sm_90a"));
static cl::opt<std::string>
    cacheDir("cache-dir", cl::desc("Kernel cache directory"), cl::init(""));
static cl::opt<int> steps(
    "steps",
    cl::desc("Run the entry (or the sequence) N times, carrying optimizer "
             "state (new parameters and moments become the next call's "
             "arguments) and counting the step argument up; prints each "
             "call"),
    cl::init(1));

[[noreturn]] static void die(const std::string &msg) {
  llvm::errs() << "te-run: " << msg << "\n";
  std::exit(1);
}

static const char *descrOf(rt::DType t) {
  switch (t) {
  case rt::DType::F32:
    return "<f4";
  case rt::DType::F16:
    return "<f2";
  case rt::DType::BF16:
    return "<u2";
  case rt::DType::I64:
    return "<i8";
  default:
    return "|u1";
  }
}

/// Argument bytes from an .npy file, converting f32 to bf16/f16 (RNE).
static std::vector<uint8_t> loadArgument(const cg::Value &v,
                                         const std::string &path) {
  te::npy::Array a;
  std::string error;
  if (!te::npy::read(path, a, error))
    die(error);
  if (a.shape != v.shape) {
    std::string want, got;
    for (int64_t d : v.shape)
      want += (want.empty() ? "" : "x") + std::to_string(d);
    for (int64_t d : a.shape)
      got += (got.empty() ? "" : "x") + std::to_string(d);
    die("'" + path + "' has shape " + got + ", argument '" + v.name +
        "' needs " + want);
  }
  std::string want = descrOf(v.dtype);
  if (a.descr == want)
    return a.bytes;
  if (a.descr == "<f4" &&
      (v.dtype == rt::DType::BF16 || v.dtype == rt::DType::F16)) {
    llvm::errs() << "te-run: note: '" << path << "' is float32; rounding it to "
                 << rt::dtypeName(v.dtype) << " (nearest even) for '" << v.name
                 << "'\n";
    size_t n = a.bytes.size() / 4;
    std::vector<uint8_t> out(n * 2);
    for (size_t i = 0; i < n; ++i) {
      float f;
      std::memcpy(&f, &a.bytes[4 * i], 4);
      uint16_t h = v.dtype == rt::DType::BF16 ? rt::ref::floatToBF16(f)
                                              : rt::ref::floatToF16(f);
      out[2 * i] = uint8_t(h);
      out[2 * i + 1] = uint8_t(h >> 8);
    }
    return out;
  }
  die("'" + path + "' has dtype " + a.descr + ", argument '" + v.name +
      "' is " + rt::dtypeName(v.dtype) + " (give " + want +
      (v.dtype == rt::DType::BF16 ? " bf16 bit patterns" : "") +
      (v.dtype == rt::DType::BF16 || v.dtype == rt::DType::F16 ? " or <f4"
                                                               : "") +
      ")");
}

/// Seeded values: sign, magnitude 2^-8 .. 2^8 with a random mantissa. A
/// scalar is an optimizer's: an i64 step 1 + seed % 10, an f32 lr 1e-3.
static std::vector<uint8_t> randomArgument(const cg::Value &v, uint64_t seed) {
  if (v.shape.empty()) {
    std::vector<uint8_t> out(size_t(rt::dtypeSize(v.dtype)));
    if (v.dtype == rt::DType::I64) {
      int64_t step = 1 + int64_t(seed % 10);
      std::memcpy(out.data(), &step, 8);
    } else {
      float lr = 1e-3f;
      std::memcpy(out.data(), &lr, 4);
    }
    return out;
  }
  uint64_t state = seed * 0x9E3779B97F4A7C15ull + 1;
  auto next = [&state] {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  };
  int64_t n = v.rows() * v.cols();
  std::vector<uint8_t> out(size_t(n * rt::dtypeSize(v.dtype)));
  for (int64_t i = 0; i < n; ++i) {
    uint64_t r = next();
    uint32_t bits = uint32_t(r & 0x80000000u) |
                    (uint32_t(119 + (r >> 32) % 17) << 23) |
                    uint32_t((r >> 8) & 0x7FFFFF);
    float f;
    std::memcpy(&f, &bits, 4);
    if (v.dtype == rt::DType::F32) {
      std::memcpy(&out[4 * size_t(i)], &f, 4);
    } else {
      uint16_t h = v.dtype == rt::DType::BF16 ? rt::ref::floatToBF16(f)
                                              : rt::ref::floatToF16(f);
      out[2 * size_t(i)] = uint8_t(h);
      out[2 * size_t(i) + 1] = uint8_t(h >> 8);
    }
  }
  return out;
}

static void dump(const cg::Entry &e,
                 const std::vector<cg::ValueData> &results) {
  if (!llvm::sys::fs::is_directory(dumpDir) &&
      llvm::sys::fs::create_directories(dumpDir))
    die("cannot create directory '" + dumpDir + "'");
  for (size_t i = 0; i < results.size(); ++i) {
    for (const cg::NamedBuffer &b : results[i]) {
      te::npy::Array a;
      a.descr = descrOf(b.desc.dtype);
      const cg::Value &v = e.values[e.results[i]];
      if (!v.isQuantized())
        a.shape = v.shape; // a tensor keeps its own shape
      else
        a.shape = {b.desc.rows, b.desc.cols};
      a.bytes = b.bytes;
      std::string file =
          dumpDir + "/result" + std::to_string(i) +
          (b.name == "data" && results[i].size() == 1 ? std::string()
                                                      : "." + b.name) +
          ".npy";
      std::string error;
      if (!te::npy::write(file, a, error))
        die(error);
    }
  }
  llvm::outs() << "dumped " << results.size() << " result(s) to " << dumpDir
               << "\n";
}

static void summarize(const cg::Entry &e,
                      const std::vector<cg::ValueData> &results) {
  for (size_t i = 0; i < results.size(); ++i) {
    const cg::Value &v = e.values[e.results[i]];
    llvm::outs() << "result" << i << " (" << v.name << "):";
    for (const cg::NamedBuffer &b : results[i])
      llvm::outs() << " " << b.name << "[" << b.desc.rows << "x" << b.desc.cols
                   << " " << rt::dtypeName(b.desc.dtype) << "]";
    llvm::outs() << "\n";
  }
}

/// One line per call of --steps or of an --entry sequence: the RMS of every
/// floating-point tensor result (the parameters an optimizer step returns, a
/// weight gradient), so a user sees them evolve.
static void printStep(const cg::Entry &e, const std::string &label,
                      const std::vector<cg::ValueData> &results) {
  llvm::outs() << label << ":";
  for (size_t i = 0; i < results.size(); ++i) {
    const cg::Value &v = e.values[e.results[i]];
    if (v.isQuantized() || v.dtype == rt::DType::I64)
      continue;
    const std::vector<uint8_t> &b = results[i][0].bytes;
    size_t size = size_t(rt::dtypeSize(v.dtype)), n = b.size() / size;
    double sum = 0;
    for (size_t j = 0; j < n; ++j) {
      float f;
      if (v.dtype == rt::DType::F32) {
        std::memcpy(&f, &b[4 * j], 4);
      } else {
        uint16_t h = uint16_t(b[2 * j] | b[2 * j + 1] << 8);
        f = v.dtype == rt::DType::BF16 ? rt::ref::bf16ToFloat(h)
                                       : rt::ref::f16ToFloat(h);
      }
      sum += double(f) * f;
    }
    llvm::outs() << llvm::format(" rms(result%zu)=%.9g", i,
                                 n ? std::sqrt(sum / double(n)) : 0.0);
  }
  llvm::outs() << "\n";
}

static double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

/// Device-to-device copy bandwidth (bytes read + written per second) of a
/// 1 GiB buffer: the ceiling quantize kernels are measured against.
static double copyCeiling(const rt::Stream &s) {
  const size_t bytes = size_t(1) << 30;
  auto a = rt::DeviceBuffer::allocate(bytes),
       b = rt::DeviceBuffer::allocate(bytes);
  auto timer = rt::EventTimer::create();
  if (!a || !b || !timer)
    return 0;
  std::vector<double> ms;
  for (int i = 0; i < 12; ++i) {
    if (!timer->start(s).isOk() || !b->copyFrom(*a, bytes, s).isOk() ||
        !timer->stop(s).isOk())
      return 0;
    auto t = timer->elapsedMillis();
    if (t && i >= 2)
      ms.push_back(*t);
  }
  return ms.empty() ? 0 : 2.0 * double(bytes) / (median(ms) * 1e-3);
}

/// Median milliseconds of `runs` CUDA-event-timed calls after 3 warm-ups.
template <typename Fn>
static double timeMedian(rt::EventTimer &timer, const rt::Stream &s, Fn body) {
  std::vector<double> ms;
  for (int i = 0; i < benchRuns + 3; ++i) {
    rt::Status st = timer.start(s);
    if (st.isOk())
      st = body();
    if (st.isOk())
      st = timer.stop(s);
    if (!st.isOk())
      die(st.toString());
    auto t = timer.elapsedMillis();
    if (!t)
      die(t.status().toString());
    if (i >= 3)
      ms.push_back(*t);
  }
  return median(ms);
}

/// Times every kernel on its own (GEMMs in TFLOP/s, the others in GB/s and
/// % of the copy ceiling), then the whole entry back to back, after warming
/// up with the whole entry.
static void bench(cg::CudaRunner &runner, const rt::Stream &s) {
  double ceiling = copyCeiling(s);
  llvm::outs() << llvm::format(
      "copy ceiling (1 GiB device-to-device): %.0f GB/s\n", ceiling * 1e-9);
  auto timer = rt::EventTimer::create();
  if (!timer)
    die(timer.status().toString());
  // Warm up with the whole entry first: the first few dozen runs after the
  // ceiling's copies measured 13 % slow on the H100 (MXFP8 16384x8192: 232.7
  // then 205.6 us), more than three warm-up runs absorb.
  for (int i = 0; i < std::max(30, int(benchRuns)); ++i)
    if (rt::Status st = runner.run(s); !st.isOk())
      die(st.toString());
  double gemmUs = 0, otherUs = 0;
  for (size_t k = 0; k < runner.numKernels(); ++k) {
    const cg::KernelPlan &kp = runner.kernelPlan(k);
    double t = timeMedian(*timer, s, [&] { return runner.runKernel(k, s); });
    if (kp.flops) {
      gemmUs += t * 1e3;
      llvm::outs() << llvm::format(
          "bench %-28s cuBLASLt GEMM %9.1f us  %8.1f TFLOP/s\n",
          kp.name.c_str(), t * 1e3, double(kp.flops) / (t * 1e-3) * 1e-12);
      continue;
    }
    otherUs += t * 1e3;
    double gbs = double(kp.bytesMoved) / (t * 1e-3) * 1e-9;
    llvm::outs() << llvm::format(
        "bench %-28s %u launch(es)  %9.1f us  %10.3f MB  %7.0f GB/s  %5.1f%% "
        "of copy\n",
        kp.name.c_str(), kp.launches, t * 1e3, double(kp.bytesMoved) * 1e-6,
        gbs, ceiling > 0 ? 100.0 * gbs * 1e9 / ceiling : 0.0);
  }
  double whole = timeMedian(*timer, s, [&] { return runner.run(s); }) * 1e3;
  llvm::outs() << llvm::format("bench entry (%zu kernels back to back) "
                               "%9.1f us",
                               runner.numKernels(), whole);
  if (gemmUs > 0)
    llvm::outs() << llvm::format(
        "; alone: GEMMs %.1f us, other kernels %.1f us (%.1f%% of their sum)",
        gemmUs, otherUs, 100.0 * otherUs / (gemmUs + otherUs));
  llvm::outs() << "\n";
}

int main(int argc, char **argv) {
  cl::ParseCommandLineOptions(argc, argv,
                              "tejit: compile, run, check and time "
                              "a te program\n");
  if (!backend.empty() && backend != "cuda" && backend != "cpu" &&
      backend != "both")
    die("--backend must be cuda, cpu or both");

  mlir::MLIRContext context;
  context.getOrLoadDialect<mlir::te::TeDialect>();
  context.getOrLoadDialect<mlir::func::FuncDialect>();
  llvm::SourceMgr sources;
  mlir::SourceMgrDiagnosticHandler handler(sources, &context);
  auto buffer = llvm::MemoryBuffer::getFileOrSTDIN(inputFile);
  if (!buffer)
    die("cannot read '" + inputFile + "'");
  sources.AddNewSourceBuffer(std::move(*buffer), llvm::SMLoc());
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceFile<mlir::ModuleOp>(sources, &context);
  if (!module)
    return 1;
  mlir::FailureOr<cg::Program> program =
      mlir::te::compileToProgram(*module, arch);
  if (mlir::failed(program))
    return 1;

  // The entries to call, in order: --entry a,b,c runs a sequence in one
  // session (persistent values carried between calls); --steps repeats it.
  std::vector<const cg::Entry *> sequence;
  if (entryName.empty()) {
    if (program->entries.size() != 1)
      die("the module has " + std::to_string(program->entries.size()) +
          " functions; pick one with --entry");
    sequence.push_back(&program->entries.front());
  } else {
    llvm::SmallVector<llvm::StringRef> names;
    llvm::StringRef(entryName).split(names, ',');
    for (llvm::StringRef n : names) {
      const cg::Entry *e = program->find(n.trim().str());
      if (!e)
        die("no function '" + n.trim().str() + "' in '" + inputFile + "'");
      sequence.push_back(e);
    }
  }
  if (steps < 1)
    die("--steps must be at least 1");
  std::vector<const cg::Entry *> distinct;
  for (const cg::Entry *e : sequence)
    if (std::find(distinct.begin(), distinct.end(), e) == distinct.end())
      distinct.push_back(e);

  // --input NAME=FILE: NAME is an argument of a single entry (arg0 or 0),
  // ENTRY.argN, or a persistent value's name.
  std::map<std::string, std::string> given;
  for (const std::string &in : inputs) {
    size_t eq = in.find('=');
    if (eq == std::string::npos)
      die("--input wants NAME=FILE.npy, got '" + in + "'");
    std::string name = in.substr(0, eq);
    if (!name.empty() && name[0] == '%')
      name = name.substr(1);
    if (!name.empty() && std::isdigit(static_cast<unsigned char>(name[0])))
      name = "arg" + name;
    given[name] = in.substr(eq + 1);
  }
  std::set<std::string> used;
  auto inputFor = [&](const cg::Entry &e, size_t i) -> const std::string * {
    const cg::Value &v = e.values[e.args[i]];
    for (const std::string &key :
         {e.name + "." + v.name, distinct.size() == 1 ? v.name : std::string(),
          e.persistentArg(i)}) {
      auto it = key.empty() ? given.end() : given.find(key);
      if (it != given.end()) {
        used.insert(key);
        return &it->second;
      }
    }
    return nullptr;
  };

  // Which persistent values some entry writes (for error messages).
  std::map<std::string, std::string> writers;
  for (const cg::Entry &e : program->entries)
    for (size_t i = 0; i < e.results.size(); ++i)
      if (!e.persistentResult(i).empty()) {
        std::string &w = writers[e.persistentResult(i)];
        w += (w.empty() ? "" : ", ") + e.name;
      }

  // Arguments of each entry, built once: from --input, else seeded random
  // data (entry k's argument i from seed + 100 k + i). A persistent
  // quantized value has no such data: an entry must write it first.
  std::map<const cg::Entry *, std::vector<std::vector<uint8_t>>> argsOf;
  for (size_t k = 0; k < distinct.size(); ++k) {
    const cg::Entry &e = *distinct[k];
    // Random second moments must be non-negative (else sqrt gives NaN).
    std::set<int> secondMoments;
    for (const cg::Kernel &kn : e.kernels)
      if (kn.kind == cg::Kernel::Kind::Adam)
        for (const cg::AdamTensor &t : kn.adam.tensors)
          secondMoments.insert(t.expAvgSq);
    std::vector<std::vector<uint8_t>> &args = argsOf[&e];
    for (size_t i = 0; i < e.args.size(); ++i) {
      const cg::Value &v = e.values[e.args[i]];
      const std::string &persistent = e.persistentArg(i);
      if (v.isQuantized()) {
        if (persistent.empty())
          die("argument '" + v.name + "' of '" + e.name +
              "' is quantized: te-run holds quantized arguments only as "
              "persistent values an earlier entry writes (te.persistent)");
        args.emplace_back(); // the session's store provides it
        continue;
      }
      if (const std::string *file = inputFor(e, i)) {
        args.push_back(loadArgument(v, *file));
      } else if (randomSeed >= 0) {
        args.push_back(randomArgument(v, uint64_t(randomSeed) + 100 * k + i));
        if (secondMoments.count(e.args[i]))
          for (size_t b = 3; b < args.back().size(); b += 4)
            args.back()[b] &= 0x7F; // Adam's v is a mean of squares: >= 0
      } else {
        die("argument '" + v.name + "' of '" + e.name +
            "' has no data: give --input " +
            (persistent.empty() ? v.name : persistent) +
            "=FILE.npy or --random-inputs SEED");
      }
    }
  }
  for (auto &[name, file] : given)
    if (!used.count(name))
      die("--input names '" + name + "', which no entry run takes");
  // A persistent quantized value must be written before it is read.
  {
    std::set<std::string> held;
    for (const cg::Entry *e : sequence) {
      for (size_t i = 0; i < e->args.size(); ++i) {
        const std::string &n = e->persistentArg(i);
        if (n.empty() || held.count(n))
          continue;
        if (e->values[e->args[i]].isQuantized())
          die("'" + e->name + "' reads the persistent quantized '" + n +
              "' before any entry wrote it" +
              (writers.count(n)
                   ? "; run one that writes it first (" + writers[n] + ")"
                   : "; no entry writes it"));
        held.insert(n);
      }
      for (size_t i = 0; i < e->results.size(); ++i)
        if (!e->persistentResult(i).empty())
          held.insert(e->persistentResult(i));
    }
  }

  // Backends.
  rt::KernelCache cache(cacheDir.empty() ? rt::KernelCache::defaultDiskDir()
                                         : std::string(cacheDir));
  rt::Expected<rt::Device> device = rt::Device::open();
  bool wantCuda = backend == "cuda" || backend == "both" || check ||
                  benchRuns > 0 || (backend.empty() && device);
  bool wantCpu = backend == "cpu" || backend == "both" || check || !device;
  std::string noGpu;
  if (!device) {
    noGpu = device.status().message();
    noGpu = noGpu.substr(0, noGpu.find_first_of(":\n"));
  }
  if (wantCuda && !device) {
    if (backend == "cuda" || backend == "both" || benchRuns > 0)
      die("the CUDA backend needs a GPU (" + noGpu + ")");
    wantCuda = false; // --check: compile and run the CPU side, say so below
  }
  if (!device) {
    size_t sources = 0;
    std::string unsupported;
    for (const cg::Entry *e : distinct) {
      rt::Expected<size_t> n = cg::compileEntry(*program, *e, cache);
      if (!n && n.status().code() != rt::StatusCode::Unsupported)
        die(n.status().toString());
      if (n)
        sources += *n;
      else if (unsupported.empty()) // no CUDA lowering yet: nothing to compile
        unsupported = n.status().message();
    }
    llvm::outs() << "no GPU (" << noGpu << "): ";
    if (unsupported.empty())
      llvm::outs() << "compiled " << sources
                   << " kernel source(s) with NVRTC for " << program->arch;
    else
      llvm::outs() << unsupported;
    llvm::outs() << "; running the CPU backend"
                 << (check ? " only (--check needs a GPU to compare)" : "")
                 << "\n";
  }

  const cg::Entry &only = *sequence.front();
  bool single = sequence.size() == 1;
  if (single && steps > 1 && cg::carriedState(only).empty() &&
      std::all_of(only.resultPersistent.begin(), only.resultPersistent.end(),
                  [](const std::string &n) { return n.empty(); }))
    die("--steps carries optimizer state, but '" + only.name +
        "' updates no argument with an optimizer step");

  // The session: per backend, the persistent values and each entry's
  // runner; the CPU also keeps each entry's carried (non-persistent)
  // optimizer state and which of it is inexact.
  cg::HostStore hostStore;
  cg::DeviceStore deviceStore;
  std::optional<rt::Stream> stream;
  std::map<const cg::Entry *, cg::CudaRunner> runners;
  std::map<const cg::Entry *, std::vector<bool>> inexactOf;
  std::map<const cg::Entry *, int> callsOf;
  if (wantCuda) {
    auto st = rt::Stream::create(*device);
    if (!st)
      die(st.status().toString());
    stream.emplace(std::move(*st));
  }
  auto orDie = [](const rt::Status &st) {
    if (!st.isOk())
      die(st.toString());
  };

  size_t totalCalls = sequence.size() * size_t(steps);
  std::vector<cg::ValueData> cpuResults, cudaResults;
  cg::Comparison total;
  for (size_t call = 0; call < totalCalls; ++call) {
    const cg::Entry &e = *sequence[call % sequence.size()];
    std::vector<std::vector<uint8_t>> &args = argsOf[&e];
    int nth = callsOf[&e]++;
    int stepArg = cg::stepArgument(e);
    if (stepArg >= 0 && nth > 0) { // the step counts up per call
      int64_t v;
      std::memcpy(&v, args[size_t(stepArg)].data(), 8);
      ++v;
      std::memcpy(args[size_t(stepArg)].data(), &v, 8);
    }
    std::vector<cg::CarriedState> carried = cg::carriedState(e);

    cg::CpuState state;
    if (wantCpu) {
      std::vector<bool> &inexact = inexactOf[&e];
      inexact.resize(args.size(), false);
      auto r = cg::runCpu(*program, e, args, &state, &inexact, &hostStore);
      if (!r)
        die(r.status().message());
      cpuResults = std::move(*r);
    }
    if (wantCuda) {
      auto it = runners.find(&e);
      if (it == runners.end()) {
        auto r =
            cg::CudaRunner::create(*program, e, *device, cache, &deviceStore);
        if (!r)
          die(r.status().toString());
        it = runners.emplace(&e, std::move(*r)).first;
        orDie(it->second.poison(0xA5, *stream));
        for (size_t i = 0; i < args.size(); ++i)
          if (!e.values[e.args[i]].isQuantized() &&
              !deviceStore.holds(e.persistentArg(i)))
            orDie(it->second.setArgument(i, args[i], *stream));
      } else if (stepArg >= 0) {
        orDie(it->second.setArgument(size_t(stepArg), args[size_t(stepArg)],
                                     *stream));
      }
      orDie(it->second.run(*stream));
      auto r = it->second.results(*stream);
      if (!r)
        die(r.status().toString());
      cudaResults = std::move(*r);
      orDie(it->second.carry(carried, *stream));
    }
    // The CPU's carried state replaces the arguments only now: the CUDA
    // runner of a first call uploads them above.
    if (wantCpu)
      for (const cg::CarriedState &c : carried) {
        args[c.argument] = state.tensors[size_t(c.value)];
        // Computed from GEMM outputs, it differs between backends: what
        // the next call computes from it is not compared.
        inexactOf[&e][c.argument] = state.inexact[size_t(c.value)];
      }
    std::string label = single
                            ? "step " + std::to_string(call + 1)
                            : "call " + std::to_string(call + 1) + " " + e.name;
    if (totalCalls > 1)
      printStep(e, label, wantCuda ? cudaResults : cpuResults);

    if (wantCuda && wantCpu) {
      cg::Comparison c =
          cg::compareResults(cpuResults, cudaResults, "cpu", "cuda");
      if (!c.difference.empty()) {
        llvm::outs() << "check: MISMATCH"
                     << (totalCalls > 1 ? " in " + label : std::string()) << " "
                     << c.difference << "\n";
        return 2;
      }
      total.exactBuffers += c.exactBuffers;
      total.boundedBuffers += c.boundedBuffers;
      total.uncheckedBuffers += c.uncheckedBuffers;
      total.bytes += c.bytes;
      total.worstBoundRatio =
          std::max(total.worstBoundRatio, c.worstBoundRatio);
      // A persistent value only bounded against the CPU's (a GEMM output)
      // is replaced on the device by the CPU's bytes, so every later call
      // starts both backends from the same state and compares bit for bit.
      for (size_t i = 0; i < e.results.size(); ++i) {
        const std::string &n = e.persistentResult(i);
        bool inexact = false;
        for (const cg::NamedBuffer &b : cpuResults[i])
          inexact |= b.unbounded || !b.tolerance.empty();
        if (n.empty() || !inexact)
          continue;
        orDie(deviceStore.upload(n, cpuResults[i], *stream));
        hostStore.markExact(n);
      }
    }
  }

  const cg::Entry &last = *sequence[(totalCalls - 1) % sequence.size()];
  if (wantCuda && benchRuns > 0)
    bench(runners.at(&last), *stream);
  const std::vector<cg::ValueData> &primary =
      wantCuda ? cudaResults : cpuResults;
  summarize(last, primary);
  if (!dumpDir.empty())
    dump(last, primary);
  if (wantCuda && wantCpu) {
    const cg::Comparison &c = total;
    std::string calls =
        totalCalls > 1 ? " in " + std::to_string(totalCalls) + " calls" : "";
    size_t buffers = c.exactBuffers + c.boundedBuffers + c.uncheckedBuffers;
    if (c.boundedBuffers == 0 && c.uncheckedBuffers == 0) {
      llvm::outs() << "check: cuda == cpu bit for bit (" << buffers
                   << " buffers, " << c.bytes << " bytes" << calls << ")\n";
    } else {
      llvm::outs() << "check: cuda matches cpu" << calls << ": "
                   << c.exactBuffers << " buffer(s) bit for bit, "
                   << c.boundedBuffers
                   << " GEMM output(s) within the stated bound (largest "
                   << llvm::format("%.3f", c.worstBoundRatio)
                   << " of it; docs/Numerics.md)";
      if (c.uncheckedBuffers)
        llvm::outs() << ", " << c.uncheckedBuffers
                     << " computed from GEMM outputs not compared (no "
                        "bound stated)";
      llvm::outs() << "\n";
    }
  }
  return 0;
}
