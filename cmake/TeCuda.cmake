#===- cmake/TeCuda.cmake - locate the CUDA 13 toolkit ---------------------===#
#
# tejit needs CUDA's headers (cuda.h, nvrtc.h, cublasLt.h, nccl.h) at build
# time; the libraries themselves are loaded lazily at run time, so nothing
# links them.
#
#===------------------------------------------------------------------------===#
set(TE_CUDA_HOME "$ENV{CUDA_HOME}" CACHE PATH "CUDA toolkit root")
if(NOT TE_CUDA_HOME)
  set(TE_CUDA_HOME /usr/local/cuda CACHE PATH "CUDA toolkit root" FORCE)
endif()
foreach(h cuda.h nvrtc.h cublasLt.h nccl.h)
  if(NOT EXISTS "${TE_CUDA_HOME}/include/${h}")
    message(FATAL_ERROR
      "tejit: ${TE_CUDA_HOME}/include/${h} not found. Install the CUDA 13 "
      "toolkit in /usr/local/cuda or set CUDA_HOME (scripts/install-deps.sh "
      "checks this).")
  endif()
endforeach()
file(STRINGS "${TE_CUDA_HOME}/include/cuda.h" _te_cuda_ver
     REGEX "^#define CUDA_VERSION [0-9]+")
string(REGEX REPLACE "^#define CUDA_VERSION ([0-9]+).*" "\\1"
       TE_CUDA_VERSION "${_te_cuda_ver}")
if(TE_CUDA_VERSION LESS 13000)
  message(FATAL_ERROR "tejit needs CUDA >= 13.0, found ${TE_CUDA_VERSION}")
endif()
set(TE_CUDA_INCLUDE_DIR "${TE_CUDA_HOME}/include")
message(STATUS "CUDA ${TE_CUDA_VERSION} headers in ${TE_CUDA_INCLUDE_DIR}")
