//===- BlasLt.cpp - cuBLASLt GEMMs ----------------------------------------===//
//
// Part of tejit.
//
//===----------------------------------------------------------------------===//
//
// Row-major D[M,N] = A[M,K] B[N,K]^T is column-major D^T[N,M] = B A^T, so
// cuBLASLt sees (m', n', k) = (N, M, K), its operand A is our B (transposed,
// "T") and its operand B is our A ("N"): the TN layout Hopper's FP8 kernels
// require. Scale pointers and scale modes swap along with the operands. A
// transposed (high-precision) operand flips its cuBLAS op and layout.
//
//===----------------------------------------------------------------------===//

#include "te/runtime/BlasLt.h"

#include "CudaApi.h"
#include "DynamicLibrary.h"

#include <cublasLt.h>

#include <cstdlib>
#include <map>
#include <mutex>
#include <tuple>

namespace te::rt {

namespace {

struct LtApi {
#define TE_LT_FN(name) decltype(&::name) name = nullptr;
#include "BlasLtSymbols.def"
#undef TE_LT_FN
};

Expected<const LtApi *> ltApi() {
  static const Expected<LtApi> api = []() -> Expected<LtApi> {
    std::vector<std::string> names = {"libcublasLt.so.13"};
    if (const char *home = std::getenv("CUDA_HOME"))
      names.push_back(std::string(home) + "/lib64/libcublasLt.so.13");
    names.push_back("/usr/local/cuda/lib64/libcublasLt.so.13");
    Expected<detail::DynamicLibrary> lib = detail::DynamicLibrary::open(
        names, StatusCode::LibraryMissing,
        "cuBLASLt 13 (libcublasLt.so.13) not found, so GEMMs cannot run; "
        "tried");
    if (!lib)
      return lib.status();
    LtApi a;
#define TE_LT_FN(name)                                                         \
  a.name = reinterpret_cast<decltype(a.name)>(lib->symbol(#name));             \
  if (!a.name)                                                                 \
    return Status(StatusCode::LibraryMissing, lib->path() + " lacks " #name);
#include "BlasLtSymbols.def"
#undef TE_LT_FN
    return a;
  }();
  if (!api)
    return api.status();
  return &*api;
}

Status ltCheck(const LtApi &api, cublasStatus_t s, const char *what) {
  if (s == CUBLAS_STATUS_SUCCESS)
    return Status::ok();
  return Status(StatusCode::BlasError, std::string(what) + " failed: " +
                                           api.cublasLtGetStatusString(s));
}

Expected<cudaDataType_t> cudaType(DType t) {
  switch (t) {
  case DType::F32:
    return CUDA_R_32F;
  case DType::F16:
    return CUDA_R_16F;
  case DType::BF16:
    return CUDA_R_16BF;
  case DType::E4M3:
    return CUDA_R_8F_E4M3;
  case DType::E5M2:
    return CUDA_R_8F_E5M2;
  case DType::E8M0:
  case DType::E2M1x2:
  case DType::I64:
    break;
  }
  return Status(StatusCode::Unsupported,
                std::string(dtypeName(t)) + " is not a GEMM element type");
}

cublasLtMatmulMatrixScale_t scaleMode(GemmScaling s) {
  switch (s) {
  case GemmScaling::Block1x128:
    return CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F;
  case GemmScaling::Block128x128:
    return CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F;
  case GemmScaling::None:
  case GemmScaling::PerTensor:
    break;
  }
  return CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F;
}

bool isBlock(GemmScaling s) {
  return s == GemmScaling::Block1x128 || s == GemmScaling::Block128x128;
}

/// What makes two GEMMs share descriptors and algorithm.
using PlanKey =
    std::tuple<int64_t, int64_t, int64_t, DType, GemmScaling, bool, DType,
               GemmScaling, bool, DType, bool, DType, bool, bool>;

PlanKey keyOf(const GemmProblem &p) {
  return {p.m,          p.n,         p.k,
          p.a.dtype,    p.a.scaling, p.a.transposed,
          p.b.dtype,    p.b.scaling, p.b.transposed,
          p.outType,    p.bias != 0, p.biasType,
          p.accumulate, p.fastAccum};
}

struct MatmulPlan {
  const LtApi *api = nullptr;
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;
  cublasLtMatmulAlgo_t algo;
  ~MatmulPlan() {
    if (!api)
      return;
    if (desc)
      api->cublasLtMatmulDescDestroy(desc);
    for (cublasLtMatrixLayout_t l : {la, lb, lc})
      if (l)
        api->cublasLtMatrixLayoutDestroy(l);
  }
};

/// Points the descriptor at this call's scales and bias (cuBLASLt's A is our
/// B, so the scale pointers swap).
Status setPointers(const LtApi &api, cublasLtMatmulDesc_t desc,
                   const GemmProblem &p, bool fp8) {
  auto setPtr = [&](cublasLtMatmulDescAttributes_t attr, uint64_t v) {
    const void *ptr = reinterpret_cast<const void *>(v);
    return ltCheck(
        api, api.cublasLtMatmulDescSetAttribute(desc, attr, &ptr, sizeof(ptr)),
        "cublasLtMatmulDescSetAttribute");
  };
  if (fp8) {
    TE_RETURN_IF_ERROR(
        setPtr(CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, p.b.scaleInv));
    TE_RETURN_IF_ERROR(
        setPtr(CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, p.a.scaleInv));
  }
  if (p.bias)
    TE_RETURN_IF_ERROR(setPtr(CUBLASLT_MATMUL_DESC_BIAS_POINTER, p.bias));
  return Status::ok();
}

} // namespace

struct BlasLt::State {
  const LtApi *api = nullptr;
  cublasLtHandle_t handle = nullptr;
  DeviceBuffer workspace;
  std::mutex mu;
  std::map<PlanKey, std::unique_ptr<MatmulPlan>> plans;
  ~State() {
    plans.clear();
    if (api && handle)
      api->cublasLtDestroy(handle);
  }
};

Expected<BlasLt> BlasLt::create(const Device &device, size_t workspaceBytes) {
  Expected<const LtApi *> api = ltApi();
  if (!api)
    return api.status();
  TE_RETURN_IF_ERROR(device.makeCurrent());
  auto st = std::make_shared<State>();
  st->api = *api;
  TE_RETURN_IF_ERROR(
      ltCheck(**api, (*api)->cublasLtCreate(&st->handle), "cublasLtCreate"));
  Expected<DeviceBuffer> ws = DeviceBuffer::allocate(workspaceBytes);
  if (!ws)
    return ws.status();
  st->workspace = std::move(*ws);
  BlasLt b;
  b.state_ = std::move(st);
  return b;
}

int BlasLt::version() const {
  return state_ ? int(state_->api->cublasLtGetVersion()) : 0;
}

size_t BlasLt::cachedPlans() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->plans.size();
}

std::string BlasLt::validate(const GemmProblem &p) {
  if (p.m <= 0 || p.n <= 0 || p.k <= 0)
    return "GEMM extents must be positive, got M=" + std::to_string(p.m) +
           " N=" + std::to_string(p.n) + " K=" + std::to_string(p.k);
  if (p.outType != DType::BF16 && p.outType != DType::F16 &&
      p.outType != DType::F32)
    return std::string("GEMM output must be bf16, f16 or f32, got ") +
           dtypeName(p.outType);
  bool fa = isFp8(p.a.dtype), fb = isFp8(p.b.dtype);
  if (!fa && !fb) {
    if (p.a.dtype != p.b.dtype)
      return "high-precision GEMM operands must share a type";
    if (!cudaType(p.a.dtype))
      return cudaType(p.a.dtype).status().message();
    if (p.a.scaling != GemmScaling::None || p.b.scaling != GemmScaling::None)
      return "only FP8 operands take scales";
    return "";
  }
  if (fa != fb)
    return "an FP8 operand pairs only with an FP8 operand";
  if (p.a.transposed || p.b.transposed)
    return "FP8 operands must be K-contiguous ([rows, K] row-major)";
  if (p.a.dtype == DType::E5M2 && p.b.dtype == DType::E5M2)
    return "no FP8 GEMM multiplies e5m2 by e5m2";
  if (p.a.scaling == GemmScaling::None || p.b.scaling == GemmScaling::None)
    return "FP8 operands need a per-tensor or block scale";
  bool ba = isBlock(p.a.scaling), bb = isBlock(p.b.scaling);
  if (ba != bb)
    return "per-tensor and block-scaled FP8 operands cannot be mixed";
  if (p.k % 16 != 0)
    return "FP8 GEMMs need K % 16 == 0 (16-byte aligned rows), got K=" +
           std::to_string(p.k);
  // Measured on H100 with cuBLASLt 13.1: no FP8 kernel has a bias
  // epilogue with an f32 output (per-tensor and block-scaled alike).
  if (p.bias && p.outType == DType::F32)
    return "FP8 GEMMs with a bias need a bf16 or f16 output (cuBLASLt has no "
           "FP8 kernel with a bias epilogue and an f32 output)";
  if (ba) {
    if (p.a.scaling == GemmScaling::Block128x128 &&
        p.b.scaling == GemmScaling::Block128x128)
      return "block-scaled GEMMs cannot pair 128x128 with 128x128";
    if (p.fastAccum)
      return "block-scaled FP8 GEMMs always use the split accumulator";
    if (p.m % 8 != 0 || p.n % 8 != 0)
      return "block-scaled FP8 GEMMs need M % 8 == 0 and N % 8 == 0, got M=" +
             std::to_string(p.m) + " N=" + std::to_string(p.n);
  }
  return "";
}

std::string BlasLt::describe(const GemmProblem &p) {
  auto operand = [](const char *name, const BlasLtOperand &o,
                    const char *rows) {
    static const char *scalings[] = {"", " per-tensor", " 1x128", " 128x128"};
    return std::string(name) + " " + dtypeName(o.dtype) +
           scalings[size_t(o.scaling)] + " [" +
           (o.transposed ? std::string("K,") + rows
                         : std::string(rows) + ",K") +
           "]";
  };
  return "M=" + std::to_string(p.m) + " N=" + std::to_string(p.n) +
         " K=" + std::to_string(p.k) + ": " + operand("A", p.a, "M") + " x " +
         operand("B", p.b, "N") + " -> " + dtypeName(p.outType) +
         (p.bias ? std::string(" + bias ") + dtypeName(p.biasType) : "") +
         (p.accumulate ? " (accumulate)" : "");
}

Status BlasLt::gemm(const GemmProblem &p, const Stream &s) {
  std::string invalid = validate(p);
  if (!invalid.empty())
    return Status(StatusCode::InvalidArgument, invalid);
  const LtApi &api = *state_->api;
  std::lock_guard<std::mutex> lock(state_->mu);
  std::unique_ptr<MatmulPlan> &slot = state_->plans[keyOf(p)];
  bool fp8 = isFp8(p.a.dtype);
  if (!slot) {
    auto plan = std::make_unique<MatmulPlan>();
    plan->api = &api;
    cudaDataType_t ta = *cudaType(p.a.dtype), tb = *cudaType(p.b.dtype),
                   td = *cudaType(p.outType);
    TE_RETURN_IF_ERROR(ltCheck(api,
                               api.cublasLtMatmulDescCreate(
                                   &plan->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F),
                               "cublasLtMatmulDescCreate"));
    auto set = [&](cublasLtMatmulDescAttributes_t attr, const void *v,
                   size_t n) {
      return ltCheck(api,
                     api.cublasLtMatmulDescSetAttribute(plan->desc, attr, v, n),
                     "cublasLtMatmulDescSetAttribute");
    };
    // cuBLASLt's A is our B: "T" when stored [N, K], "N" when [K, N]; its
    // B is our A: "N" when stored [M, K], "T" when [K, M].
    cublasOperation_t opA = p.b.transposed ? CUBLAS_OP_N : CUBLAS_OP_T;
    cublasOperation_t opB = p.a.transposed ? CUBLAS_OP_T : CUBLAS_OP_N;
    TE_RETURN_IF_ERROR(set(CUBLASLT_MATMUL_DESC_TRANSA, &opA, sizeof(opA)));
    TE_RETURN_IF_ERROR(set(CUBLASLT_MATMUL_DESC_TRANSB, &opB, sizeof(opB)));
    if (fp8) {
      // Only set when asked: cuBLASLt rejects block scaling once the
      // attribute is present, even with the default value.
      if (p.fastAccum) {
        int8_t fast = 1;
        TE_RETURN_IF_ERROR(set(CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast, 1));
      }
      if (isBlock(p.a.scaling)) {
        // cuBLASLt's A is our B and vice versa.
        auto ma = scaleMode(p.b.scaling), mb = scaleMode(p.a.scaling);
        TE_RETURN_IF_ERROR(
            set(CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &ma, sizeof(ma)));
        TE_RETURN_IF_ERROR(
            set(CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &mb, sizeof(mb)));
      }
    }
    if (p.bias) {
      cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_BIAS;
      TE_RETURN_IF_ERROR(set(CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof(epi)));
      Expected<cudaDataType_t> bt = cudaType(p.biasType);
      if (!bt)
        return bt.status();
      TE_RETURN_IF_ERROR(
          set(CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &*bt, sizeof(*bt)));
    }
    auto layout = [&](cublasLtMatrixLayout_t *l, cudaDataType_t t, int64_t rows,
                      int64_t cols) {
      return ltCheck(api,
                     api.cublasLtMatrixLayoutCreate(l, t, rows, cols, rows),
                     "cublasLtMatrixLayoutCreate");
    };
    // Column-major views of the row-major storage.
    TE_RETURN_IF_ERROR(p.b.transposed ? layout(&plan->la, tb, p.n, p.k)
                                      : layout(&plan->la, tb, p.k, p.n));
    TE_RETURN_IF_ERROR(p.a.transposed ? layout(&plan->lb, ta, p.m, p.k)
                                      : layout(&plan->lb, ta, p.k, p.m));
    TE_RETURN_IF_ERROR(layout(&plan->lc, td, p.n, p.m)); // D^T, col-major

    // Block-scaled heuristics need the scale pointers in place.
    TE_RETURN_IF_ERROR(setPointers(api, plan->desc, p, fp8));
    cublasLtMatmulPreference_t pref = nullptr;
    TE_RETURN_IF_ERROR(ltCheck(api, api.cublasLtMatmulPreferenceCreate(&pref),
                               "cublasLtMatmulPreferenceCreate"));
    size_t wsBytes = state_->workspace.size();
    api.cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsBytes,
        sizeof(wsBytes));
    cublasLtMatmulHeuristicResult_t result = {};
    int found = 0;
    cublasStatus_t hs = api.cublasLtMatmulAlgoGetHeuristic(
        state_->handle, plan->desc, plan->la, plan->lb, plan->lc, plan->lc,
        pref, 1, &result, &found);
    api.cublasLtMatmulPreferenceDestroy(pref);
    if (hs != CUBLAS_STATUS_SUCCESS || found == 0)
      return Status(
          StatusCode::BlasError,
          std::string("cuBLASLt has no kernel for this GEMM (") +
              dtypeName(p.a.dtype) + " x " + dtypeName(p.b.dtype) + " -> " +
              dtypeName(p.outType) + ", M=" + std::to_string(p.m) +
              " N=" + std::to_string(p.n) + " K=" + std::to_string(p.k) +
              "): " + api.cublasLtGetStatusString(hs));
    plan->algo = result.algo;
    slot = std::move(plan);
  }
  MatmulPlan &plan = *slot;
  TE_RETURN_IF_ERROR(setPointers(api, plan.desc, p, fp8));
  float alpha = 1.0f, beta = p.accumulate ? 1.0f : 0.0f;
  void *d = reinterpret_cast<void *>(p.out);
  return ltCheck(api,
                 api.cublasLtMatmul(
                     state_->handle, plan.desc, &alpha,
                     reinterpret_cast<const void *>(p.b.data), plan.la,
                     reinterpret_cast<const void *>(p.a.data), plan.lb, &beta,
                     d, plan.lc, d, plan.lc, &plan.algo,
                     reinterpret_cast<void *>(state_->workspace.devicePtr()),
                     state_->workspace.size(),
                     static_cast<cudaStream_t>(s.handle())),
                 "cublasLtMatmul");
}

} // namespace te::rt
