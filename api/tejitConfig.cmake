# find_package(tejit) for programs that use tejit's host C++ API:
#   target_link_libraries(app PRIVATE tejit::api)
# tejit::api is libtejit.so with the headers of te/api/Tejit.h. It needs no
# MLIR, LLVM or CUDA at link time; the CUDA driver, NVRTC and cuBLASLt are
# opened at run time, and without a GPU the CPU backend (HostSession) runs.
include("${CMAKE_CURRENT_LIST_DIR}/tejitTargets.cmake")
