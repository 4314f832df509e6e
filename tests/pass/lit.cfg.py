# lit configuration for the shapetrace pass tests: IR tests (ir/, FileCheck on opt-19 and clang-19
# output) and end-to-end tests (e2e/, programs compiled with the wrappers, run, their recorded
# events checked). Paths come from lit.site.cfg.py, which CMake writes into the build tree.
import os
import sys
import lit.formats

config.name = "shapetrace-pass"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".ll", ".c", ".cpp", ".test"]
config.excludes = ["Inputs", "lit.cfg.py", "lit.site.cfg.py", "trace_dump.cpp", "CMakeLists.txt"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.shapetrace_binary_dir, "tests", "pass")

# FileCheck, not, count and split-file of LLVM 19 come first in PATH.
config.environment["PATH"] = os.pathsep.join(
    [config.llvm_tools_dir, config.environment.get("PATH", os.environ.get("PATH", ""))])
for passthrough in ("HOME", "TMPDIR"):
    if passthrough in os.environ:
        config.environment[passthrough] = os.environ[passthrough]

plugin = config.shapetrace_plugin
bindir = os.path.join(config.shapetrace_binary_dir, "bin")
config.substitutions.extend([
    ("%opt_shapetrace", f"{config.llvm_tools_dir}/opt -load-pass-plugin={plugin}"),
    ("%clang_plugin", f"{config.llvm_tools_dir}/clang -fplugin={plugin} -fpass-plugin={plugin}"
                      f" -I{config.shapetrace_source_dir}/runtime/include"),
    ("%shapetrace_cc", os.path.join(bindir, "shapetrace-cc")),
    ("%shapetrace_cxx", os.path.join(bindir, "shapetrace-c++")),
    ("%shapetrace_dump", os.path.join(config.shapetrace_binary_dir, "tests", "pass",
                                      "shapetrace-test-dump")),
    ("%plugin", plugin),
    ("%clang", f"{config.llvm_tools_dir}/clang"),
    ("%shapetrace", os.path.join(bindir, "shapetrace")),
    ("%python", sys.executable),
    ("%libdir", os.path.join(config.shapetrace_binary_dir, "lib")),
    ("%runtime_include", os.path.join(config.shapetrace_source_dir, "runtime", "include")),
])

if config.shapetrace_have_runtime:
    config.available_features.add("shapetrace-runtime")
if config.shapetrace_have_analyzer:
    config.available_features.add("shapetrace-analyzer")
config.substitutions.append(("%llc_x86", f"{config.llvm_tools_dir}/llc -mtriple=x86_64-pc-linux-gnu"))
# The IR tests run for both targets the pass supports: `%aarch64_of %s` is the test's module for
# aarch64-unknown-linux-gnu (the x86-64 data layout dropped: the target's own applies), and
# %llc_a64 compiles it. The IR the pass makes is the same for both; the A64 checks are the code.
config.substitutions.append(
    ("%aarch64_of", "sed -e 's/x86_64-pc-linux-gnu/aarch64-unknown-linux-gnu/' -e '/^target datalayout/d'"))
config.substitutions.append(("%llc_a64", f"{config.llvm_tools_dir}/llc -mtriple=aarch64-unknown-linux-gnu"))
