//===- Report.cpp - What te-run prints and dumps --------------------------===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//

#include "Report.h"

#include "Inputs.h"
#include "Npy.h"

#include "te/codegen/ScalingState.h"
#include "te/runtime/reference/Codecs.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstring>

namespace te::run {

void dump(const cg::Entry &e, const std::vector<exec::ValueData> &results,
          const std::string &dumpDir) {
  if (!llvm::sys::fs::is_directory(dumpDir) &&
      llvm::sys::fs::create_directories(dumpDir))
    die("cannot create directory '" + dumpDir + "'");
  for (size_t i = 0; i < results.size(); ++i) {
    for (const exec::NamedBuffer &b : results[i]) {
      npy::Array a;
      a.descr = npyDescr(b.desc.dtype);
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
      if (!npy::write(file, a, error))
        die(error);
    }
  }
  llvm::outs() << "dumped " << results.size() << " result(s) to " << dumpDir
               << "\n";
}

void summarize(const cg::Entry &e,
               const std::vector<exec::ValueData> &results) {
  for (size_t i = 0; i < results.size(); ++i) {
    const cg::Value &v = e.values[e.results[i]];
    llvm::outs() << "result" << i << " (" << v.name << "):";
    for (const exec::NamedBuffer &b : results[i])
      llvm::outs() << " " << b.name << "[" << b.desc.rows << "x" << b.desc.cols
                   << " " << rt::dtypeName(b.desc.dtype) << "]";
    llvm::outs() << "\n";
  }
}

void printStep(const cg::Entry &e, const std::string &label,
               const std::vector<exec::ValueData> &results) {
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

void printStates(const std::vector<std::string> &names,
                 const std::vector<exec::ValueData> &states) {
  for (size_t i = 0; i < names.size() && i < states.size(); ++i) {
    std::vector<float> history;
    float scale = 0;
    for (const exec::NamedBuffer &b : states[i]) {
      if (b.name == cg::kStateScalePart) {
        std::memcpy(&scale, b.bytes.data(), 4);
      } else {
        history.resize(b.bytes.size() / 4);
        std::memcpy(history.data(), b.bytes.data(), b.bytes.size());
      }
    }
    float newest = history.empty() ? 0.0f : history.back(), max = 0.0f;
    size_t recorded = 0;
    for (float h : history) {
      max = std::fmax(max, h);
      recorded += h != 0.0f;
    }
    llvm::outs() << llvm::format("  %s: scale=%.9g amax=%.9g history_max=%.9g",
                                 names[i].c_str(), double(scale),
                                 double(newest), double(max))
                 << " (" << recorded << " of " << history.size()
                 << " recorded)\n";
  }
}

void printSwitch(size_t call, const exec::BackendSession::Switch &s) {
  llvm::outs() << "switch before call " << call << ":";
  if (s.requantized.empty())
    llvm::outs() << " no stored value changes format";
  for (size_t i = 0; i < s.requantized.size(); ++i)
    llvm::outs() << (i ? "," : "") << " re-quantized " << s.requantized[i].first
                 << " from " << s.requantized[i].second;
  llvm::outs() << "\n";
}

void printCheck(const exec::Comparison &c, size_t numCalls) {
  std::string calls =
      numCalls > 1 ? " in " + std::to_string(numCalls) + " calls" : "";
  size_t buffers = c.exactBuffers + c.boundedBuffers + c.uncheckedBuffers;
  if (c.boundedBuffers == 0 && c.uncheckedBuffers == 0) {
    llvm::outs() << "check: cuda == cpu bit for bit (" << buffers
                 << " buffers, " << c.bytes << " bytes" << calls << ")\n";
  } else {
    llvm::outs() << "check: cuda matches cpu" << calls << ": " << c.exactBuffers
                 << " buffer(s) bit for bit, " << c.boundedBuffers
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

} // namespace te::run
