#include "engine/block_hash.h"

namespace gossamer::engine {

namespace {

uint64_t mix(uint64_t z) {  // the splitmix64 finaliser
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace

uint64_t hash_block(uint64_t parent, std::span<const int32_t> tokens) {
  uint64_t h = mix(parent ^ (0x9e3779b97f4a7c15ULL * (tokens.size() + 1)));
  for (const int32_t token : tokens) h = mix(h + 0x9e3779b97f4a7c15ULL + static_cast<uint32_t>(token));
  return h;
}

}  // namespace gossamer::engine
