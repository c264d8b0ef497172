// Uses the installed pev: parse a spec, evaluate the reference, round to float.
#include <cstdio>

#include "pev/ref/rope.h"
#include "pev/scalar/round.h"
#include "pev/spec/parse.h"

int main() {
  const auto s = std::get<pev::spec::rope>(pev::spec::parse_spec("rope:head_dim=128"));
  const pev::ref::rope_reference r(s);
  const float f = pev::round_to<float>(r.inv_freq()[16]);
  std::printf("inv_freq[16] = %.9g\n", f);
  return f == 0.1f ? 0 : 1;
}
