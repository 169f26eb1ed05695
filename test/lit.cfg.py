# -*- Python -*-
# lit configuration of tejit's FileCheck tests (test/Dialect, test/Passes, ...).
import os

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "TEJIT"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.te_obj_root, "test")
config.excludes = ["Inputs", "fuzz", "CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py",
                   "unittests"]

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%te_src_root", config.te_src_root))

llvm_config.with_system_environment(["HOME", "INCLUDE", "LIB", "TMP", "TEMP"])
llvm_config.use_default_substitutions()

tool_dirs = [config.te_tools_dir, config.llvm_tools_dir]
tools = ["te-opt", "te-run", "te-translate", "te-example-host-api", "not",
         "FileCheck", "count"]
llvm_config.add_tool_substitutions(tools, tool_dirs)
