//===- SassHazards.cpp - scanning a CUBIN's SASS for ptxas hazards --------===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//

#include "SassHazards.h"

#include "te/codegen/PlanBuilder.h"
#include "te/runtime/NvrtcCompiler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <unistd.h>

namespace te {
namespace test {

namespace {

std::string findNvdisasm() {
  std::vector<std::string> candidates;
  if (const char *e = std::getenv("TE_NVDISASM"))
    candidates.push_back(e);
  if (const char *path = std::getenv("PATH")) {
    std::stringstream dirs(path);
    for (std::string d; std::getline(dirs, d, ':');)
      candidates.push_back(d + "/nvdisasm");
  }
  if (const char *cuda = std::getenv("CUDA_HOME"))
    candidates.push_back(std::string(cuda) + "/bin/nvdisasm");
  candidates.push_back("/usr/local/cuda/bin/nvdisasm");
  for (const std::string &c : candidates)
    if (!c.empty() && access(c.c_str(), X_OK) == 0)
      return c;
  return "";
}

} // namespace

std::optional<std::string> disassembleCubin(const std::vector<char> &cubin,
                                            std::string &why) {
  std::string tool = findNvdisasm();
  if (tool.empty()) {
    why = "no nvdisasm (set TE_NVDISASM or put the CUDA toolkit's bin on "
          "PATH)";
    return std::nullopt;
  }
  char name[] = "/tmp/te-sass-XXXXXX";
  int fd = mkstemp(name);
  if (fd < 0) {
    why = "cannot create a temporary file";
    return std::nullopt;
  }
  close(fd);
  std::ofstream(name, std::ios::binary)
      .write(cubin.data(), std::streamsize(cubin.size()));
  std::string cmd = "'" + tool + "' -c '" + name + "' 2>&1";
  std::string out;
  if (FILE *p = popen(cmd.c_str(), "r")) {
    char buf[1 << 16];
    for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;)
      out.append(buf, n);
    int rc = pclose(p);
    std::remove(name);
    if (rc != 0) {
      why = tool + " failed: " + out.substr(0, 500);
      return std::nullopt;
    }
    return out;
  }
  std::remove(name);
  why = "cannot run " + tool;
  return std::nullopt;
}

std::vector<std::string> reconvergenceHazards(const std::string &sass) {
  struct Line {
    enum Kind { Instr, Label, Function } kind;
    std::string text, address;
  };
  static const std::regex instr(R"(^\s*/\*([0-9a-f]+)\*/\s+(.*?)\s*;)");
  static const std::regex label(R"(^(\.L_x_\d+):)");
  static const std::regex function(R"(^\s*([\w$.]+):\s*$)");
  std::vector<Line> lines;
  std::stringstream in(sass);
  for (std::string l; std::getline(in, l);) {
    std::smatch m;
    if (std::regex_search(l, m, instr))
      lines.push_back({Line::Instr, m[2], m[1]});
    else if (std::regex_search(l, m, label))
      lines.push_back({Line::Label, m[1], ""});
    else if (std::regex_match(l, m, function))
      lines.push_back({Line::Function, m[1], ""});
  }
  // The first instruction after each label: a branch to a label right
  // before `BSYNC Bn` is a lane going to wait on Bn.
  std::map<std::string, std::string> after;
  for (size_t i = 0; i < lines.size(); ++i)
    if (lines[i].kind == Line::Label)
      for (size_t j = i + 1; j < lines.size(); ++j)
        if (lines[j].kind == Line::Instr) {
          after[lines[i].text] = lines[j].text;
          break;
        }
  static const std::regex bssy(R"(^BSSY (B\d+), `\((\.L_x_\d+)\))");
  static const std::regex bra(R"(^@!?U?P\w+ BRA `\((\.L_x_\d+)\))");
  static const std::regex reload(R"(^BMOV\.32 (B\d+), R\d+$)");
  struct Region {
    std::string barrier, end;
    bool waiting = false;
  };
  std::vector<Region> open;
  std::vector<std::string> hazards;
  std::string fn;
  for (size_t i = 0; i < lines.size(); ++i) {
    const Line &l = lines[i];
    std::smatch m;
    if (l.kind == Line::Function) {
      fn = l.text;
      open.clear();
      continue;
    }
    if (l.kind == Line::Label) {
      open.erase(
          std::remove_if(open.begin(), open.end(),
                         [&](const Region &r) { return r.end == l.text; }),
          open.end());
      continue;
    }
    if (std::regex_search(l.text, m, bssy)) {
      open.push_back({m[1], m[2]});
    } else if (std::regex_search(l.text, m, bra)) {
      for (Region &r : open)
        if (r.end == m[1] || after[m[1]].rfind("BSYNC " + r.barrier, 0) == 0)
          r.waiting = true;
    } else if (std::regex_match(l.text, m, reload) && i + 1 < lines.size() &&
               lines[i + 1].text.rfind("BSYNC " + m[1].str(), 0) == 0) {
      for (const Region &r : open)
        if (r.barrier == m[1]) {
          if (r.waiting)
            hazards.push_back(fn + " at 0x" + l.address);
          break;
        }
    }
  }
  return hazards;
}

void expectNoReconvergenceHazards(const cg::Program &p) {
  std::string why;
  if (findNvdisasm().empty())
    GTEST_SKIP() << "no nvdisasm (set TE_NVDISASM or put the CUDA toolkit's "
                    "bin on PATH)";
  rt::Expected<cg::EntryPlan> plan = cg::buildEntryPlan(p, p.entries[0]);
  ASSERT_TRUE(plan) << plan.status().toString();
  for (const cg::KernelPlan &kp : plan->kernels)
    for (const rt::KernelSpec &spec : kp.plan.kernels) {
      rt::Expected<rt::CompiledKernel> k =
          rt::compileCuda(spec.source, spec.name, spec.options);
      if (!k && k.status().code() == rt::StatusCode::LibraryMissing)
        GTEST_SKIP() << k.status().toString();
      ASSERT_TRUE(k) << k.status().toString();
      std::optional<std::string> sass = disassembleCubin(k->cubin, why);
      ASSERT_TRUE(sass) << why;
      ASSERT_NE(sass->find("BSYNC"), std::string::npos)
          << "no convergence barrier in " << spec.name << ": not SASS?";
      for (const std::string &h : reconvergenceHazards(*sass))
        ADD_FAILURE() << spec.name << ": BSYNC on a reloaded barrier while "
                      << "lanes wait on it, " << h;
    }
}

} // namespace test
} // namespace te
