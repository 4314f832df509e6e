# Compile options shared by every target the project writes itself.
#
# shapetrace_project_target(<target>) turns on warnings-as-errors and the sanitizer selected with
# SHAPETRACE_SANITIZE. Generated code (Cap'n Proto) and third-party headers are left out of -Werror
# by keeping them in their own targets or behind SYSTEM include directories.

if(SHAPETRACE_SANITIZE STREQUAL "")
  set(SHAPETRACE_SANITIZE_FLAGS "")
elseif(SHAPETRACE_SANITIZE STREQUAL "address,undefined" OR SHAPETRACE_SANITIZE STREQUAL "thread")
  set(SHAPETRACE_SANITIZE_FLAGS -fsanitize=${SHAPETRACE_SANITIZE} -fno-omit-frame-pointer
      -fno-sanitize-recover=all)
else()
  message(FATAL_ERROR "SHAPETRACE_SANITIZE must be empty, 'address,undefined' or 'thread', "
                      "not '${SHAPETRACE_SANITIZE}'")
endif()

# Sanitizers apply to the whole link so that runtime libraries match. Sanitized builds exist to run
# the tests, so they are compiled as the sanitizers' documentation advises: -O1 (fast enough to run,
# and it keeps the frames a report names) with line tables only, which is all a report prints. The
# -O and -g given here come after the build type's, so they are the ones that count.
if(SHAPETRACE_SANITIZE_FLAGS)
  add_compile_options(${SHAPETRACE_SANITIZE_FLAGS} -O1 -gline-tables-only)
  add_link_options(${SHAPETRACE_SANITIZE_FLAGS})
endif()

function(shapetrace_project_target target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow -Wconversion
                         -Wno-sign-conversion -Werror)
endfunction()

# shapetrace_fuzzer(<name> SOURCES <files> [INCLUDES <dirs>] [LIBRARIES <libs>] LABEL <label>
#                   CORPUS <dir> [RUNS <n>])
# A libFuzzer target built with clang's -fsanitize=fuzzer,address,undefined. SOURCES are the target
# and the parsers it reads with, compiled into it so that they carry the coverage instrumentation
# (LIBRARIES are linked as built). Its smoke run is the ctest <name>_smoke: RUNS inputs (default
# 100000) or 30 seconds, whichever comes first, from the seed corpus CORPUS; it fails on a crash,
# a sanitizer report, a leak or more than 2 GiB of memory.
function(shapetrace_fuzzer name)
  cmake_parse_arguments(FUZZ "" "LABEL;CORPUS;RUNS" "SOURCES;INCLUDES;LIBRARIES" ${ARGN})
  if(NOT FUZZ_RUNS)
    set(FUZZ_RUNS 100000)
  endif()
  add_executable(${name} ${FUZZ_SOURCES})
  target_include_directories(${name} PRIVATE ${FUZZ_INCLUDES})
  target_link_libraries(${name} PRIVATE ${FUZZ_LIBRARIES})
  target_compile_options(${name} PRIVATE -fsanitize=fuzzer,address,undefined
                         -fno-sanitize-recover=all)
  target_link_options(${name} PRIVATE -fsanitize=fuzzer,address,undefined)
  shapetrace_project_target(${name})
  add_test(NAME ${name}_smoke COMMAND ${name} -runs=${FUZZ_RUNS} -max_total_time=30
                                      -rss_limit_mb=2048 ${FUZZ_CORPUS})
  set_tests_properties(${name}_smoke PROPERTIES LABELS ${FUZZ_LABEL})
endfunction()
