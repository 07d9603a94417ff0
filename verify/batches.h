// Work in fixed batches of consecutive items, each batch in a fresh Z3 context, over several threads. Z3's
// choices follow term ids, which depend on everything a context saw before, so a context per thread would make
// results depend on thread scheduling; a batch is the same whichever thread takes it, so results depend on
// the items only. Not one context per item: deleting a context costs about as much as a small proof.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <thread>
#include <vector>

#include <z3++.h>

namespace teq {

/// Items done one after the other in one Z3 context.
inline constexpr size_t kItemsPerContext = 16;

/// Threads for `jobs` (0 = all cores), at most one per batch of `items`.
inline int batch_threads(int jobs, size_t items) {
  int n = jobs > 0 ? jobs : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return std::min<int>(n, static_cast<int>(std::max<size_t>((items + kItemsPerContext - 1) / kItemsPerContext, 1)));
}

/// Calls fn(i, ctx) for every i < items: items b*16 .. b*16+15 in order, in one fresh context.
template <typename Fn>
void for_each_in_batches(size_t items, int jobs, Fn&& fn) {
  const size_t batches = (items + kItemsPerContext - 1) / kItemsPerContext;
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t b; (b = next++) < batches;) {
      z3::context ctx;
      for (size_t i = b * kItemsPerContext; i < std::min(items, (b + 1) * kItemsPerContext); ++i) fn(i, ctx);
    }
  };
  std::vector<std::thread> threads;
  for (int t = 1; t < batch_threads(jobs, items); ++t) threads.emplace_back(worker);
  worker();
  for (std::thread& t : threads) t.join();
}

}  // namespace teq
