// Work spread over threads for rulegen's stages (pruning, proofs, minimization): parallel_for runs an
// index range on a thread pool of the requested size; each index is handled exactly once.
#pragma once

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

namespace teq::synth {

/// `requested`, or all hardware threads when it is 0 or less.
inline int thread_count(int requested) {
  if (requested > 0) return requested;
  return std::max(1u, std::thread::hardware_concurrency());
}

/// Runs f(i) for i in [0, n) on `threads` threads.
template <class F>
void parallel_for(size_t n, int threads, F&& f) {
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < n;) f(i);
  };
  if (threads <= 1 || n < 2) {
    work();
    return;
  }
  std::vector<std::thread> pool;
  for (int t = 0; t < std::min<int>(threads, static_cast<int>(n)); ++t) pool.emplace_back(work);
  for (auto& t : pool) t.join();
}

}  // namespace teq::synth
