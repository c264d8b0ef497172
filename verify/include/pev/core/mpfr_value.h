#pragma once
// An mpfr_t of a given precision that is cleared on every path out of scope: the one RAII owner of
// raw MPFR scratch values (scalar rounding, the fast reference's start-up tables and bound).

#include <mpfr.h>

namespace pev {

class mpfr_value {
 public:
  explicit mpfr_value(mpfr_prec_t prec) { mpfr_init2(v_, prec); }
  ~mpfr_value() { mpfr_clear(v_); }
  mpfr_value(const mpfr_value&) = delete;
  mpfr_value& operator=(const mpfr_value&) = delete;
  mpfr_ptr get() { return v_; }

 private:
  mpfr_t v_;
};

}  // namespace pev
