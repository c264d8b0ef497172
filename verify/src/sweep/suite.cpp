// The embedded default suite of `pev report` (issue 5): realistic configurations, as SPEC strings
// so that each check names the exact spec it ran.

#include <string>
#include <vector>

#include "pev/spec/parse.h"
#include "pev/sweep/sweep.h"

namespace pev::sweep {
namespace {

// Phi-3-mini-128k-instruct's LongRoPE factor lists (48 pairs of head_dim 96), from its config.json.
#define PEV_PHI3_SHORT                                                                            \
  "[1.0,1.0,1.0,1.0,1.0,1.0,1.0,1.0,1.0,1.0,1.0,1.0,1.0,1.0,1.0,1.0,1.0,1.0,1.0,1.0,1.0,1.0,1.0," \
  "1.0,1.0,1.0,1.0,1.0,1.0,1.0,1.0125000476837158,1.0307786464691162,1.0521396398544312,"         \
  "1.0757858753204346,1.1012910604476929,1.128382682800293,1.1568691730499268,"                   \
  "1.1866066455841064,1.2174829244613647,1.2494077682495117,1.2823063135147095,"                  \
  "1.316115379333496,1.3507812023162842,1.3862570524215698,1.4225019216537476,"                   \
  "1.4594793319702148,1.497157096862793,1.5355058908462524]"
#define PEV_PHI3_LONG                                                                             \
  "[1.0299999713897705,1.0317927598953247,1.0371899604797363,1.046248197555542,"                  \
  "1.0590626001358032,1.0757691860198975,1.0965467691421509,1.1216199398040771,"                  \
  "1.1512638330459595,1.185808539390564,1.2256453037261963,1.2712342739105225,1.323112964630127," \
  "1.3819069862365723,1.4483424425125122,1.5232607126235962,1.6076363325119019,"                  \
  "1.7025971412658691,1.8094497919082642,1.92970871925354,2.0651304721832275,"                    \
  "2.2177562713623047,2.3899600505828857,2.5845091342926025,2.8046329021453857,"                  \
  "3.0541090965270996,3.3373641967773438,3.6595964431762695,4.026923179626465,4.446559429168701," \
  "4.927031517028809,5.478443145751953,6.112791061401367,6.844353675842285,7.690169811248779,"    \
  "8.670616149902344,9.810124397277832,11.138062477111816,12.68981647491455,14.508133888244629,"  \
  "16.644790649414062,19.162654876708984,22.138263702392578,25.665042877197266,29."               \
  "857330322265625,"                                                                              \
  "34.85543441772461,40.831993103027344,48.0]"

struct named_spec {
  const char* name;
  const char* spec;
};

const named_spec kDefault[] = {
    {"llama2", "rope:head_dim=128,rope_theta=10000"},
    {"llama3.1",
     "rope:head_dim=128,rope_theta=500000,rope_type=llama3,factor=8,low_freq_factor=1,"
     "high_freq_factor=4,original_max_position_embeddings=8192"},
    {"qwen2.5-yarn",
     "rope:head_dim=128,rope_theta=1000000,rope_type=yarn,factor=4,"
     "original_max_position_embeddings=32768"},
    {"deepseek-v3-rope",
     "rope:head_dim=64,rope_theta=10000,layout=interleaved,rope_type=yarn,factor=40,"
     "original_max_position_embeddings=4096,beta_fast=32,beta_slow=1,mscale=1,mscale_all_dim=1"},
    {"gpt-oss",
     "rope:head_dim=64,rope_theta=150000,rope_type=yarn,factor=32,"
     "original_max_position_embeddings=4096,beta_fast=32,beta_slow=1,truncate=false"},
    {"gemma3-global", "rope:head_dim=256,rope_theta=1000000,rope_type=linear,factor=8"},
    {"phi3-longrope",
     "rope:head_dim=96,rope_theta=10000,rope_type=longrope,factor=32,"
     "original_max_position_embeddings=4096,max_position_embeddings=131072,short_"
     "factor=" PEV_PHI3_SHORT ",long_factor=" PEV_PHI3_LONG},
    // Qwen2.5-VL's MRoPE (docs/encodings.md §4.6): every value of an MRoPE table is a 1-D value
    // at its pair's stream position, so the sweep over 1-D positions (text tokens) covers every
    // (position, pair) value the table can hold.
    {"qwen2.5-vl-mrope", "rope:head_dim=128,rope_theta=1000000,mrope_section=[16,24,24]"},
    {"sinusoidal-512", "sinusoidal:d_model=512"},
    {"alibi-32", "alibi:num_heads=32"},
    {"alibi-12", "alibi:num_heads=12"},
    {"t5-32-128", "t5:num_buckets=32,max_distance=128,bidirectional=true"},
};

}  // namespace

std::vector<suite_entry> default_suite() {
  std::vector<suite_entry> out;
  for (const auto& n : kDefault) out.push_back({n.name, spec::parse_spec(n.spec), ""});
  return out;
}

}  // namespace pev::sweep
