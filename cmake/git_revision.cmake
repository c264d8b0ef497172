# Build-time provenance (run with cmake -P, at configure time and at every build): writes OUT, a
# header defining PEV_GIT_REVISION — `git rev-parse --short=12 HEAD` of SOURCE_DIR, with "-dirty"
# when tracked files differ from it, or "unknown" outside a git checkout — so that a certificate
# names the revision the binary was built from, not the one CMake was configured at. OUT is
# rewritten only when the revision changes: a build at the same revision recompiles nothing.
execute_process(COMMAND git rev-parse --short=12 HEAD WORKING_DIRECTORY "${SOURCE_DIR}"
                OUTPUT_VARIABLE rev OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR NOT rev)
  set(rev "unknown")
else()
  execute_process(COMMAND git status --porcelain --untracked-files=no
                  WORKING_DIRECTORY "${SOURCE_DIR}" OUTPUT_VARIABLE changes ERROR_QUIET)
  if(changes)
    string(APPEND rev "-dirty")
  endif()
endif()
set(text "#pragma once\n// Generated at build time by cmake/git_revision.cmake.\n#define PEV_GIT_REVISION \"${rev}\"\n")
set(old "")
if(EXISTS "${OUT}")
  file(READ "${OUT}" old)
endif()
if(NOT old STREQUAL text)
  file(WRITE "${OUT}" "${text}")
endif()
