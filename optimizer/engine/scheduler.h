// BackoffScheduler: egg's backoff scheduler for single-pattern rules. A rule that finds more than
// match_limit << times_banned matches in one iteration is banned for ban_length << times_banned iterations
// (both double with every ban), so that a rule that explodes (associativity, commutativity) cannot fill the
// e-graph while the others starve. When the e-graph stops changing while rules are banned, the runner lifts
// the bans (as egg does) instead of declaring saturation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace teq {

class BackoffScheduler {
 public:
  BackoffScheduler() = default;
  BackoffScheduler(size_t num_rules, bool enabled, size_t match_limit, size_t ban_length)
      : rules_(num_rules), enabled_(enabled), match_limit_(match_limit), ban_length_(ban_length) {}

  /// Forgets every ban: a new run.
  void reset() { rules_.assign(rules_.size(), {}); }
  /// Whether rule `r` may search in iteration `iter`.
  bool can_search(size_t r, size_t iter) const { return !enabled_ || iter >= rules_[r].banned_until; }
  /// The most matches rule `r` may find before it is banned (SIZE_MAX: no limit). The search may stop
  /// after one more than this: that is enough to know.
  size_t match_threshold(size_t r) const { return enabled_ ? match_limit_ << rules_[r].times_banned : SIZE_MAX; }
  /// Records rule `r`'s matches in iteration `iter`; true when they exceed its threshold and it is banned
  /// (its matches are then not applied).
  bool record(size_t r, size_t iter, size_t matches) {
    if (matches <= match_threshold(r)) return false;
    Rule& s = rules_[r];
    ++s.times_banned;
    s.banned_until = iter + (ban_length_ << s.times_banned);
    return true;
  }
  /// Lifts every ban, keeping the ban counts (thresholds stay raised).
  void unban_all() {
    for (Rule& s : rules_) s.banned_until = 0;
  }

 private:
  struct Rule {
    size_t times_banned = 0;
    size_t banned_until = 0;
  };
  std::vector<Rule> rules_;
  bool enabled_ = false;
  size_t match_limit_ = 0, ban_length_ = 0;
};

}  // namespace teq
