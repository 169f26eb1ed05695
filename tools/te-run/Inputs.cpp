//===- Inputs.cpp - te-run's argument data --------------------------------===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//

#include "Inputs.h"

#include "Npy.h"

#include "te/exec/CpuBackend.h"
#include "te/runtime/reference/Codecs.h"

#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <set>
#include <variant>

namespace te::run {

void die(const std::string &msg) {
  llvm::errs() << "te-run: " << msg << "\n";
  std::exit(1);
}

const char *npyDescr(rt::DType t) {
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

/// Argument bytes from an .npy file, converting f32 to bf16/f16 (RNE). The
/// header's shape and dtype are checked before the payload is read, so a
/// file never costs more memory than the argument it is for.
static std::vector<uint8_t> loadArgument(const cg::Value &v,
                                         const std::string &path) {
  std::string want = npyDescr(v.dtype);
  bool narrows = v.dtype == rt::DType::BF16 || v.dtype == rt::DType::F16;
  auto accept = [&](const npy::Array &a) -> std::string {
    if (a.shape != v.shape) {
      std::string need, got;
      for (int64_t d : v.shape)
        need += (need.empty() ? "" : "x") + std::to_string(d);
      for (int64_t d : a.shape)
        got += (got.empty() ? "" : "x") + std::to_string(d);
      return "'" + path + "' has shape " + got + ", argument '" + v.name +
             "' needs " + need;
    }
    if (a.descr == want || (a.descr == "<f4" && narrows))
      return "";
    return "'" + path + "' has dtype " + a.descr + ", argument '" + v.name +
           "' is " + rt::dtypeName(v.dtype) + " (give " + want +
           (v.dtype == rt::DType::BF16 ? " bf16 bit patterns" : "") +
           (narrows ? " or <f4" : "") + ")";
  };
  npy::Array a;
  std::string error;
  if (!npy::read(path, a, error, accept))
    die(error);
  if (a.descr == want)
    return a.bytes;
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

/// SplitMix64: te-run's seeded generator (the same numbers on every machine).
class SplitMix {
public:
  explicit SplitMix(uint64_t seed) : state_(seed * 0x9E3779B97F4A7C15ull + 1) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }

private:
  uint64_t state_;
};

/// Seeded split sizes of a grouped GEMM over `tokens` rows: ragged counts
/// (rarely multiples of 128) summing to `tokens`, the second expert of
/// three or more with no rows. No padding rows, so that --bench's FLOP
/// count (all M_total rows) is the work done; give --input split sizes to
/// run padding.
static std::vector<uint8_t> randomSplits(int64_t experts, int64_t tokens,
                                         uint64_t seed) {
  SplitMix rng(seed);
  std::vector<int64_t> weight(size_t(experts), 0);
  int64_t sum = 0;
  for (int64_t g = 0; g < experts; ++g)
    if (!(experts >= 3 && g == 1))
      sum += weight[size_t(g)] = 1 + int64_t(rng.next() % 1000);
  int64_t rows = tokens, given = 0;
  std::vector<int64_t> splits(size_t(experts), 0);
  for (int64_t g = 0; g < experts; ++g)
    given += splits[size_t(g)] = rows * weight[size_t(g)] / sum;
  splits.back() += rows - given; // the last expert always has rows
  std::vector<uint8_t> out(size_t(8 * experts));
  std::memcpy(out.data(), splits.data(), out.size());
  return out;
}

/// Seeded values like activations and gradients of a trained model:
/// approximately normal with mean 0 and standard deviation 1 (Irwin-Hall:
/// the sum of 12 uniforms in (0, 1) minus 6, hence within +-6), rounded to
/// the dtype (nearest even). Integer arithmetic and exact sums only, so the
/// data is the same on every machine. A scalar is an optimizer's: an i64
/// step 1 + seed % 10, an f32 lr 1e-3.
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
  SplitMix rng(seed);
  int64_t n = v.rows() * v.cols();
  std::vector<uint8_t> out(size_t(n * rt::dtypeSize(v.dtype)));
  for (int64_t i = 0; i < n; ++i) {
    // Twelve 16-bit uniforms from three draws; their sum is exact in fp64.
    uint64_t sum = 0;
    for (int draw = 0; draw < 3; ++draw) {
      uint64_t r = rng.next();
      for (int part = 0; part < 4; ++part, r >>= 16)
        sum += r & 0xFFFF;
    }
    // Each uniform is (u + 1/2) / 2^16: mean 1/2, variance ~1/12.
    float f = float((double(sum) + 6.0) * 0x1p-16 - 6.0);
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

/// For each entry of `sequence`, the persistent values some call before its
/// first call writes: the session's store holds them when it runs, so they
/// need no data of their own.
static std::map<const cg::Entry *, std::set<std::string>>
writtenBefore(const std::vector<const cg::Entry *> &sequence) {
  std::map<const cg::Entry *, std::set<std::string>> before;
  std::set<std::string> written;
  for (const cg::Entry *e : sequence) {
    before.emplace(e, written); // only the first call's counts
    for (size_t i = 0; i < e->results.size(); ++i)
      if (!e->persistentResult(i).empty())
        written.insert(e->persistentResult(i));
  }
  return before;
}

/// Dies if a call reads a persistent quantized value before any earlier
/// call of the sequence wrote it (it has no initial data to upload).
static void
checkPersistentReads(const cg::Program &program,
                     const std::vector<const cg::Entry *> &sequence) {
  // Which persistent values some entry writes (for error messages).
  std::map<std::string, std::string> writers;
  for (const cg::Entry &e : program.entries)
    for (size_t i = 0; i < e.results.size(); ++i)
      if (!e.persistentResult(i).empty()) {
        std::string &w = writers[e.persistentResult(i)];
        w += (w.empty() ? "" : ", ") + e.name;
      }

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

std::map<const cg::Entry *, std::vector<std::vector<uint8_t>>>
argumentsOf(const cg::Program &program,
            const std::vector<const cg::Entry *> &sequence,
            const std::vector<std::string> &inputs, int64_t randomSeed) {
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

  // Arguments of each entry, built once: from --input, else seeded random
  // data (entry k's argument i from seed + 100 k + i). A persistent value
  // an earlier call writes needs none (nor may a quantized one have any:
  // an entry must write it first).
  std::map<const cg::Entry *, std::vector<std::vector<uint8_t>>> argsOf;
  std::map<const cg::Entry *, std::set<std::string>> held =
      writtenBefore(sequence);
  // Refuse what cannot fit before allocating any of it.
  uint64_t argumentBytes = 0;
  for (const cg::Entry *e : distinct)
    for (int a : e->args) {
      const cg::Value &v = e->values[size_t(a)];
      if (!v.isQuantized())
        argumentBytes += uint64_t(v.rows()) * uint64_t(v.cols()) *
                         uint64_t(rt::dtypeSize(v.dtype));
    }
  uint64_t available = exec::availableHostMemory();
  if (available && argumentBytes > available)
    die("the arguments need " + exec::formatGiB(argumentBytes) +
        " of host memory (" + exec::formatGiB(available) + " available)");
  for (size_t k = 0; k < distinct.size(); ++k) {
    const cg::Entry &e = *distinct[k];
    // Random second moments must be non-negative (else sqrt gives NaN);
    // split sizes are row counts of the grouped GEMM's tokens.
    std::set<int> secondMoments;
    std::map<int, int64_t> splitTokens;
    for (const cg::Kernel &kn : e.kernels) {
      if (const auto *adam = std::get_if<cg::AdamKernel>(&kn))
        for (const cg::AdamTensor &t : adam->tensors)
          secondMoments.insert(t.expAvgSq);
      if (const auto *gg = std::get_if<cg::GroupedGemmKernel>(&kn))
        splitTokens[gg->splits] = e.values[size_t(gg->x)].rows();
      if (const auto *gw = std::get_if<cg::GroupedWgradKernel>(&kn))
        splitTokens[gw->splits] = e.values[size_t(gw->x)].rows();
    }
    std::vector<std::vector<uint8_t>> &args = argsOf[&e];
    for (size_t i = 0; i < e.args.size(); ++i) {
      const cg::Value &v = e.values[e.args[i]];
      const std::string &persistent = e.persistentArg(i);
      if (!persistent.empty() && held[&e].count(persistent)) {
        if (given.count(e.name + "." + v.name))
          die("--input names '" + e.name + "." + v.name +
              "', the persistent '" + persistent +
              "', which an earlier call writes before '" + e.name +
              "' reads it");
        args.emplace_back(); // the session's store provides it
        continue;
      }
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
      } else if (randomSeed >= 0 && splitTokens.count(e.args[i])) {
        args.push_back(randomSplits(v.cols(), splitTokens[e.args[i]],
                                    uint64_t(randomSeed) + 100 * k + i));
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
  checkPersistentReads(program, sequence);
  return argsOf;
}

} // namespace te::run
