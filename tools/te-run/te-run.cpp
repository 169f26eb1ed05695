//===- te-run.cpp - Compile, run, check and time a te program -------------===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// te-run FILE.mlir [--entry NAME[,NAME...]] [--backend cuda|cpu|both]
//        [--input NAME=FILE.npy]... [--random-inputs SEED] [--dump DIR]
//        [--check | --check-if-gpu] [--bench N] [--steps N] [--arch sm_90a]
//        [--cache-dir DIR] [--ranks N] [--switch-recipe CALL:LAYER=RECIPE]
//
// Parses FILE (te IR at any stage te-opt prints, "-" for stdin), runs the
// te-to-cuda pipeline, lowers the entry to the kernel level, then runs it on
// the CUDA backend (generated kernels, NVRTC, the kernel cache), the CPU
// backend (reference numerics) or both. Without a GPU it still JIT-compiles
// every kernel and runs the CPU backend. Several entries run as one session, in
// order: persistent values (te.persistent) carry from call to call on both
// backends. Bad input gets one line on stderr and exit code 1.
//
// This file is option handling: the calls run on the execution layer
// (te::exec::BackendSession); Inputs.h loads arguments, Report.h prints and
// dumps, Bench.h times.
//
//===----------------------------------------------------------------------===//

#include "Bench.h"
#include "Inputs.h"
#include "Ranks.h"
#include "Report.h"

#include "ProgramFile.h"

#include "dialect/te/TeDialect.h"
#include "dialect/tek/TekDialect.h"
#include "te/api/FromMlir.h"
#include "te/codegen/ScalingState.h"
#include "te/exec/BackendSession.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <map>
#include <new>
#include <thread>

namespace cl = llvm::cl;
namespace cg = te::cg;
namespace exec = te::exec;
namespace rt = te::rt;
using te::run::die;

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
static cl::opt<int64_t> randomSeed(
    "random-inputs",
    cl::desc("Seeded random data (SEED >= 0) for arguments without --input: "
             "approximately normal, mean 0, standard deviation 1 (the sum of "
             "12 uniforms minus 6, so within +-6), rounded to the argument's "
             "dtype; an Adam second moment gets the absolute value, a scalar "
             "step is 1 + SEED % 10 and a scalar learning rate 1e-3"),
    cl::value_desc("SEED"), cl::init(-1));
static cl::opt<std::string> dumpDir("dump", cl::desc("Write results as .npy"),
                                    cl::init(""));
static cl::opt<bool> check("check",
                           cl::desc("Run CUDA and CPU and compare bit for bit "
                                    "(fails without a GPU)"));
static cl::opt<bool> checkIfGpu(
    "check-if-gpu",
    cl::desc("--check where a GPU is present; without one, compile every "
             "kernel with NVRTC and run the CPU backend only"));
static cl::opt<int> benchRuns("bench",
                              cl::desc("Time each kernel N times (CUDA "
                                       "backend)"),
                              cl::init(0));
static cl::opt<unsigned> benchIdleMs(
    "bench-idle-ms",
    cl::desc("With --bench, leave the GPU idle this long before timing each "
             "kernel (default 0)"),
    cl::init(0));
static cl::opt<std::string>
    arch("arch",
         cl::desc("Target architecture (default: the module's te.target, "
                  "else sm_90a)"),
         cl::init(""));
static cl::opt<std::string> groupedMxfp8(
    "grouped-mxfp8",
    cl::desc("How a grouped MXFP8 GEMM reads its operands: auto (default: "
             "te-legalize-target's cost model), direct (the GEMM engine's "
             "MXFP8 kernel) or dequantize (to bf16, then the bf16 kernel)"),
    cl::init("auto"));
static cl::opt<std::string> groupedNvfp4(
    "grouped-nvfp4",
    cl::desc("How a grouped GEMM reads operands it quantizes per expert by "
             "NVFP4: auto (default: te-legalize-target's cost model), direct "
             "(their codes, the GEMM engine's NVFP4 kernel) or dequantize "
             "(their bf16 values, the bf16 kernel)"),
    cl::init("auto"));
static cl::opt<std::string>
    cacheDir("cache-dir", cl::desc("Kernel cache directory"), cl::init(""));
static cl::opt<int> ranks(
    "ranks",
    cl::desc("Run N processes, rank r on GPU r, for programs with "
             "te.all_gather, te.quantize {amax_ranks} or "
             "te.quantize_shards {rank_offsets}: they meet in a "
             "temporary directory (NCCL between GPUs, files between CPU "
             "backends); rank r draws --random-inputs with SEED + r and "
             "reads --input / writes --dump paths with {rank} replaced by "
             "r; every rank's output is printed in rank order"),
    cl::value_desc("N"), cl::init(1));
static cl::list<std::string> switchRecipes(
    "switch-recipe",
    cl::desc("Before call CALL (counting from 1 over --steps and --entry), "
             "give layer LAYER the module's recipe RECIPE (several "
             "LAYER=RECIPE separated by commas): the session goes on with "
             "the module compiled that way, quantized persistent values in "
             "a new format re-quantized from their FP32 masters"),
    cl::value_desc("CALL:LAYER=RECIPE[,LAYER=RECIPE]"));
static cl::opt<int> steps(
    "steps",
    cl::desc("Run the entry (or the sequence) N times, carrying optimizer "
             "state (new parameters and moments become the next call's "
             "arguments) and delayed-scaling state, and counting the step "
             "argument up; prints each call and each state's scale"),
    cl::init(1));

/// The entries to call, in order: --entry a,b,c runs a sequence in one
/// session (persistent values carried between calls).
static std::vector<const cg::Entry *> sequenceOf(const cg::Program &program) {
  std::vector<const cg::Entry *> sequence;
  if (entryName.empty()) {
    if (program.entries.empty())
      die("'" + inputFile + "' has no functions");
    if (program.entries.size() != 1)
      die("the module has " + std::to_string(program.entries.size()) +
          " functions; pick one with --entry");
    sequence.push_back(&program.entries.front());
    return sequence;
  }
  llvm::SmallVector<llvm::StringRef> names;
  llvm::StringRef(entryName).split(names, ',');
  for (llvm::StringRef n : names) {
    const cg::Entry *e = program.find(n.trim().str());
    if (!e)
      die("no function '" + n.trim().str() + "' in '" + inputFile + "'");
    sequence.push_back(e);
  }
  return sequence;
}

/// te-run's progress lines while the kernels compile (all at once, on the
/// host's cores): one per kernel NVRTC compiles once a second has passed,
/// and the total at the end. A warm cache prints nothing.
static rt::CompileProgressFn compileProgress() {
  auto shown = std::make_shared<bool>(false);
  return [shown](const rt::CompileProgress &p) {
    if (p.cold && p.elapsed >= 1.0) {
      *shown = true;
      llvm::errs() << llvm::format(
                          "te-run: compiled %zu/%zu kernels (%.1f s): ", p.done,
                          p.total, p.elapsed)
                   << p.name << "\n";
    }
    if (p.done == p.total && *shown)
      llvm::errs() << llvm::format(
          "te-run: %zu kernels ready in %.1f s (%u host threads)\n", p.total,
          p.elapsed, std::max(1u, std::thread::hardware_concurrency()));
  };
}

/// Compiles every kernel of the entries before the first run. Returns the
/// number of kernel sources, or sets `unsupported` when an entry has no
/// CUDA lowering yet (the CPU backend may still run it).
static size_t warmUp(const cg::Program &program,
                     const std::vector<const cg::Entry *> &entries,
                     rt::KernelCache &cache, std::string &unsupported) {
  rt::Expected<size_t> n =
      exec::compileEntries(program, entries, cache, compileProgress());
  if (n)
    return *n;
  if (n.status().code() != rt::StatusCode::Unsupported)
    die(n.status().toString());
  unsupported = n.status().message();
  return 0;
}

/// Without a GPU: NVRTC-compiles every kernel of the entries (or says which
/// kernel has no CUDA lowering yet) and says that the CPU backend runs.
static void compileOnly(const cg::Program &program,
                        const std::vector<const cg::Entry *> &distinct,
                        rt::KernelCache &cache, const std::string &noGpu) {
  std::string unsupported;
  size_t sources = warmUp(program, distinct, cache, unsupported);
  llvm::outs() << "no GPU (" << noGpu << "): ";
  if (unsupported.empty())
    llvm::outs() << "compiled " << sources
                 << " kernel source(s) with NVRTC for " << program.arch;
  else
    llvm::outs() << unsupported;
  llvm::outs() << "; running the CPU backend"
               << (checkIfGpu ? " only (--check-if-gpu: no GPU to compare)"
                              : "")
               << "\n";
}

/// te-run's progress lines for the CPU backend: one per kernel once a call
/// has run a few seconds, or from the start when it holds a lot of memory
/// (then even its first kernel takes a while).
static exec::CpuProgressFn cpuProgress(const cg::Program &program) {
  return [&program](const exec::CpuProgress &p) {
    constexpr double lateSeconds = 3;
    constexpr uint64_t bigBytes = uint64_t(1) << 30;
    if (p.kernel == p.kernels) {
      if (p.elapsed >= lateSeconds)
        llvm::errs() << llvm::format("te-run: cpu: done in %.1f s\n",
                                     p.elapsed);
      return;
    }
    if (p.elapsed < lateSeconds &&
        exec::cpuMemoryBytes(program, *p.entry) < bigBytes)
      return;
    llvm::errs() << "te-run: cpu: '" << p.entry->name << "' kernel "
                 << p.kernel + 1 << "/" << p.kernels << " " << p.what
                 << " ...\n";
  };
}

static int run(int argc, char **argv) {
  cl::ParseCommandLineOptions(argc, argv,
                              "tejit: compile, run, check and time "
                              "a te program\n");
  if (!backend.empty() && backend != "cuda" && backend != "cpu" &&
      backend != "both")
    die("--backend must be cuda, cpu or both");
  if (benchRuns < 0)
    die("--bench wants a number of runs >= 0, got " +
        std::to_string(benchRuns));
  if (benchIdleMs.getNumOccurrences() && benchRuns <= 0)
    die("--bench-idle-ms applies to --bench N with N > 0");
  if (randomSeed.getNumOccurrences() && randomSeed < 0)
    die("--random-inputs wants a seed >= 0, got " +
        std::to_string(int64_t(randomSeed)));
  if (steps < 1)
    die("--steps must be at least 1");
  if (benchRuns > 0 && backend == "cpu")
    die("--bench times the CUDA backend's kernels; --backend cpu runs none "
        "(use --backend cuda or both)");
  if (check && checkIfGpu)
    die("give --check or --check-if-gpu, not both");
  if (ranks < 1)
    die("--ranks must be at least 1");
  std::optional<te::run::RankEnv> rank = te::run::rankFromEnv();
  if (ranks > 1 && !rank)
    return te::run::launchRanks(ranks, argv);

  mlir::MLIRContext context;
  context.getOrLoadDialect<mlir::te::TeDialect>();
  context.getOrLoadDialect<mlir::tek::TekDialect>();
  context.getOrLoadDialect<mlir::func::FuncDialect>();
  llvm::SourceMgr sources;
  mlir::SourceMgrDiagnosticHandler handler(sources, &context);
  std::string error;
  std::unique_ptr<llvm::MemoryBuffer> buffer =
      te::tools::readProgramFile(inputFile, error);
  if (!buffer)
    die(error);
  sources.AddNewSourceBuffer(std::move(buffer), llvm::SMLoc());
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceFile<mlir::ModuleOp>(sources, &context);
  if (!module)
    return 1;
  te::api::CompileOptions compileOptions;
  compileOptions.arch = arch;
  compileOptions.groupedMxfp8 = groupedMxfp8;
  compileOptions.groupedNvfp4 = groupedNvfp4;
  mlir::FailureOr<cg::Program> program =
      te::api::compileToProgram(*module, compileOptions);
  if (mlir::failed(program))
    return 1;
  // --switch-recipe: the module compiled again with other layer recipes,
  // by the call before which the session switches to it.
  std::map<size_t, cg::Program> switches;
  for (const std::string &spec : switchRecipes) {
    size_t colon = spec.find(':');
    size_t call = 0;
    if (colon == std::string::npos ||
        !llvm::to_integer(llvm::StringRef(spec).take_front(colon), call, 10) ||
        call < 1)
      die("--switch-recipe wants CALL:LAYER=RECIPE[,LAYER=RECIPE] with CALL "
          ">= 1, got '" +
          spec + "'");
    if (switches.count(call - 1))
      die("--switch-recipe names call " + std::to_string(call) +
          " twice; give all its layers in one LAYER=RECIPE list");
    te::api::CompileOptions o = compileOptions;
    llvm::SmallVector<llvm::StringRef> pairs;
    llvm::StringRef(spec).drop_front(colon + 1).split(pairs, ',');
    for (llvm::StringRef pair : pairs) {
      auto [layer, recipe] = pair.split('=');
      if (!o.layerRecipes.emplace(layer.str(), recipe.str()).second)
        die("--switch-recipe gives layer '" + layer.str() +
            "' two recipes in '" + spec + "'");
    }
    mlir::OwningOpRef<mlir::ModuleOp> variant =
        mlir::parseSourceFile<mlir::ModuleOp>(sources, &context);
    mlir::FailureOr<cg::Program> p =
        variant ? te::api::compileToProgram(*variant, o)
                : mlir::FailureOr<cg::Program>(mlir::failure());
    if (mlir::failed(p))
      return 1;
    switches[call - 1] = std::move(*p);
  }

  std::vector<const cg::Entry *> sequence = sequenceOf(*program);

  // Every rank must take the same backends, or their collectives would not
  // match: a machine with GPUs needs one per rank.
  if (rank && backend != "cpu")
    if (rt::Expected<int> gpus = rt::Device::count();
        gpus && *gpus > 0 && *gpus < rank->ranks)
      die("--ranks " + std::to_string(rank->ranks) +
          " runs rank r on GPU r, but this machine has " +
          std::to_string(*gpus) +
          " GPU(s); --backend cpu runs the ranks on the CPU backend");

  // Backends.
  bool compare = check || checkIfGpu;
  rt::Expected<rt::Device> device = rt::Device::open(rank ? rank->rank : 0);
  std::string noGpu;
  if (!device) {
    noGpu = device.status().message();
    noGpu = noGpu.substr(0, noGpu.find_first_of(":\n"));
  }
  bool wantCuda = backend == "cuda" || backend == "both" || compare ||
                  benchRuns > 0 || (backend.empty() && device);
  bool wantCpu = backend == "cpu" || backend == "both" || compare || !device;
  if (wantCuda && !device) {
    if (backend == "cuda" || backend == "both" || benchRuns > 0)
      die("the CUDA backend needs a GPU (" + noGpu + ")");
    if (check)
      die("--check compared nothing: no GPU (" + noGpu +
          "); --check-if-gpu compiles the kernels and runs the CPU backend "
          "only where there is none");
    wantCuda = false; // --check-if-gpu: compile, run the CPU side, say so
  }

  // Refuse what cannot fit before allocating any argument.
  std::vector<const cg::Entry *> distinct;
  for (const cg::Entry *e : sequence)
    if (std::find(distinct.begin(), distinct.end(), e) == distinct.end())
      distinct.push_back(e);
  if (wantCpu)
    for (const cg::Entry *e : distinct) {
      rt::Status fits = exec::checkCpuMemory(*program, *e);
      if (!fits.isOk())
        die(fits.message());
    }

  int64_t seed = randomSeed;
  if (rank && seed >= 0)
    seed += rank->rank;
  // Each rank its own files: "{rank}" in --input and --dump paths.
  auto perRank = [&](std::string path) {
    if (!rank)
      return path;
    for (size_t at; (at = path.find("{rank}")) != std::string::npos;)
      path.replace(at, 6, std::to_string(rank->rank));
    return path;
  };
  std::vector<std::string> rankInputs;
  for (const std::string &in : inputs)
    rankInputs.push_back(perRank(in));
  auto argsOf = te::run::argumentsOf(*program, sequence, rankInputs, seed);
  rt::KernelCache cache(cacheDir.empty() ? rt::KernelCache::defaultDiskDir()
                                         : std::string(cacheDir));
  if (!device) {
    compileOnly(*program, distinct, cache, noGpu);
  } else if (wantCuda) {
    std::string unsupported; // BackendSession reports it
    warmUp(*program, distinct, cache, unsupported);
  }

  const cg::Entry &only = *sequence.front();
  bool single = sequence.size() == 1;
  if (single && steps > 1 && exec::carriedState(only).empty() &&
      cg::scalingStates(only).empty() &&
      std::all_of(only.resultPersistent.begin(), only.resultPersistent.end(),
                  [](const std::string &n) { return n.empty(); }))
    die("--steps carries optimizer and delayed-scaling state, but '" +
        only.name +
        "' updates no argument with an optimizer step and has no "
        "delayed-scaling state");

  auto session = exec::BackendSession::create(
      *program, wantCpu, wantCuda ? &*device : nullptr, &cache);
  if (!session)
    die(session.status().toString());
  session->setCpuProgress(cpuProgress(*program));
  std::unique_ptr<rt::FileCollective> host;
  std::unique_ptr<rt::Communicator> comm;
  if (rank) {
    auto h = rt::FileCollective::create(rank->dir, rank->rank, rank->ranks);
    if (!h)
      die(h.status().toString());
    host = std::move(*h);
    if (wantCuda) {
      auto c = rt::Communicator::create(*device, *host);
      if (!c)
        die(c.status().toString());
      comm = std::move(*c);
    }
    session->setRanks(host.get(), comm.get());
  }
  for (auto &[entry, args] : argsOf)
    session->setArguments(*entry, std::move(args));

  size_t totalCalls = sequence.size() * size_t(steps);
  if (!switches.empty() && switches.rbegin()->first >= totalCalls)
    die("--switch-recipe before call " +
        std::to_string(switches.rbegin()->first + 1) + ", but the run makes " +
        std::to_string(totalCalls) + " call(s)");
  exec::BackendSession::Call last;
  for (size_t call = 0; call < totalCalls; ++call) {
    if (auto sw = switches.find(call); sw != switches.end()) {
      auto done = session->switchProgram(sw->second);
      if (!done)
        die(done.status().toString());
      te::run::printSwitch(call + 1, *done);
      if (done->comparison && !done->comparison->difference.empty()) {
        llvm::outs() << "check: MISMATCH re-quantizing "
                     << done->comparison->difference << "\n";
        return 2;
      }
      for (const cg::Entry *&e : sequence)
        if (!(e = sw->second.find(e->name)))
          die("the switched program lost a function");
    }
    const cg::Entry &e = *sequence[call % sequence.size()];
    auto outcome = session->call(e);
    if (!outcome)
      die(outcome.status().toString());
    last = std::move(*outcome);
    std::string label = single
                            ? "step " + std::to_string(call + 1)
                            : "call " + std::to_string(call + 1) + " " + e.name;
    if (totalCalls > 1)
      te::run::printStep(e, label, last.primary());
    te::run::printStates(last.states, last.primaryStates());
    if (last.comparison && !last.comparison->difference.empty()) {
      llvm::outs() << "check: MISMATCH"
                   << (totalCalls > 1 ? " in " + label : std::string()) << " "
                   << last.comparison->difference << "\n";
      return 2;
    }
  }

  const cg::Entry &lastEntry = *sequence[(totalCalls - 1) % sequence.size()];
  if (wantCuda && benchRuns > 0)
    te::run::bench(*session->runner(lastEntry), *session->stream(), benchRuns,
                   benchIdleMs);
  te::run::summarize(lastEntry, last.primary());
  if (!dumpDir.empty())
    te::run::dump(lastEntry, last.primary(), perRank(dumpDir));
  if (wantCuda && wantCpu)
    te::run::printCheck(session->total(), totalCalls);
  return 0;
}

/// What escaped the up-front estimates still ends in one line (te-run is
/// built without exceptions: a new-handler, not a catch).
static void outOfMemory() {
  std::set_new_handler(nullptr); // die() itself may allocate
  die("out of host memory (" + exec::formatGiB(exec::availableHostMemory()) +
      " available)");
}

int main(int argc, char **argv) {
  std::set_new_handler(outOfMemory);
  return run(argc, argv);
}
