# The runtime's unit tests (ring, clock, flags), linked with the runtime's parts that have no side
# effects. Included by tests/runtime/CMakeLists.txt and, for a cross build of the runtime alone
# (SHAPETRACE_RUNTIME_ONLY), by the top-level CMakeLists.txt: scripts/test-aarch64 runs them under
# qemu-user.
add_executable(runtime_unit_tests ${CMAKE_CURRENT_LIST_DIR}/ring_test.cpp
               ${CMAKE_CURRENT_LIST_DIR}/clock_test.cpp ${CMAKE_CURRENT_LIST_DIR}/flags_test.cpp)
target_link_libraries(runtime_unit_tests PRIVATE shapetrace_runtime_parts GTest::gtest_main
                      GTest::gmock)
target_compile_definitions(runtime_unit_tests PRIVATE
  SHAPETRACE_RUNTIME_DOC="${PROJECT_SOURCE_DIR}/docs/runtime.md"
  SHAPETRACE_FLAGS_INC="${PROJECT_SOURCE_DIR}/runtime/flags.inc")
shapetrace_project_target(runtime_unit_tests)
