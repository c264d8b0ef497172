# FindMPFR: the GNU MPFR library (Debian libmpfr-dev), which ships no CMake package.
# Provides the imported target MPFR::MPFR (linked with GMP).
include(FindPackageHandleStandardArgs)
find_path(MPFR_INCLUDE_DIR NAMES mpfr.h)
find_library(MPFR_LIBRARY NAMES mpfr)
find_library(GMP_LIBRARY NAMES gmp)
find_package_handle_standard_args(MPFR REQUIRED_VARS MPFR_LIBRARY GMP_LIBRARY MPFR_INCLUDE_DIR)
if(MPFR_FOUND AND NOT TARGET MPFR::MPFR)
  add_library(MPFR::MPFR UNKNOWN IMPORTED)
  set_target_properties(MPFR::MPFR PROPERTIES IMPORTED_LOCATION "${MPFR_LIBRARY}"
                        INTERFACE_INCLUDE_DIRECTORIES "${MPFR_INCLUDE_DIR}"
                        INTERFACE_LINK_LIBRARIES "${GMP_LIBRARY}")
endif()
mark_as_advanced(MPFR_INCLUDE_DIR MPFR_LIBRARY GMP_LIBRARY)
