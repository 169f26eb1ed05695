#===- cmake/TeStaticLLVM.cmake - link MLIR/LLVM statically ----------------===#
#
# Debian's MLIR targets link LLVM through the shared libLLVM.so (150 MB), which
# the GPU machine does not have. Rewrite every imported MLIR/LLVM target so that
# "LLVM" becomes the static component libraries, and so that LLVMSupport pulls
# static zlib/zstd and not libz3 (used only by LLVM's SMT solver, never by us).
# The tools then depend on nothing but libc/libm (see docs/Building.md).
#
#===------------------------------------------------------------------------===#
# Our own libraries and tools would otherwise get "LLVM" from LLVM's macros.
set(LLVM_LINK_LLVM_DYLIB OFF)

llvm_map_components_to_libnames(TE_LLVM_STATIC_LIBS
  support demangle targetparser binaryformat remarks bitstreamreader core)

find_library(TE_ZSTD_STATIC NAMES libzstd.a)
find_library(TE_ZLIB_STATIC NAMES libz.a)
if(NOT TE_ZSTD_STATIC OR NOT TE_ZLIB_STATIC)
  message(FATAL_ERROR "static libzstd.a / libz.a not found (libzstd-dev, zlib1g-dev)")
endif()

get_property(_te_imported DIRECTORY PROPERTY IMPORTED_TARGETS)
foreach(tgt IN LISTS _te_imported)
  get_target_property(_libs ${tgt} INTERFACE_LINK_LIBRARIES)
  if(NOT _libs)
    continue()
  endif()
  set(_new "")
  foreach(lib IN LISTS _libs)
    if(lib STREQUAL "LLVM" OR lib STREQUAL "$<LINK_ONLY:LLVM>")
      list(APPEND _new ${TE_LLVM_STATIC_LIBS})
    elseif(lib MATCHES "libz3")
      # dropped: only LLVM's Z3 solver wrapper needs it
    elseif(lib STREQUAL "zstd::libzstd_shared")
      list(APPEND _new ${TE_ZSTD_STATIC})
    elseif(lib STREQUAL "ZLIB::ZLIB")
      list(APPEND _new ${TE_ZLIB_STATIC})
    else()
      list(APPEND _new ${lib})
    endif()
  endforeach()
  set_target_properties(${tgt} PROPERTIES INTERFACE_LINK_LIBRARIES "${_new}")
endforeach()

# Tools: static libstdc++/libgcc so the binary runs on older or newer distros.
set(TE_STATIC_TOOL_LINK_FLAGS -static-libstdc++ -static-libgcc -Wl,--as-needed)
