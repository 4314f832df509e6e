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

# Sanitizers apply to the whole link so that runtime libraries match.
if(SHAPETRACE_SANITIZE_FLAGS)
  add_compile_options(${SHAPETRACE_SANITIZE_FLAGS})
  add_link_options(${SHAPETRACE_SANITIZE_FLAGS})
endif()

function(shapetrace_project_target target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow -Wconversion
                         -Wno-sign-conversion -Werror)
endfunction()
