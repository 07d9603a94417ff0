#include "optimizer/engine/cycles.h"

#include <algorithm>
#include <limits>

namespace teq {

std::vector<uint32_t> strongly_connected_components(const std::vector<std::vector<uint32_t>>& adj) {
  constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();
  const size_t n = adj.size();
  std::vector<uint32_t> index(n, kNone), low(n, 0), comp(n, kNone), stack;
  std::vector<bool> on_stack(n, false);
  struct Frame {
    uint32_t v;
    size_t next;
  };
  std::vector<Frame> frames;
  uint32_t counter = 0, num_comps = 0;
  for (uint32_t s = 0; s < n; ++s) {
    if (index[s] != kNone) continue;
    frames.push_back({s, 0});
    index[s] = low[s] = counter++;
    stack.push_back(s);
    on_stack[s] = true;
    while (!frames.empty()) {
      Frame& f = frames.back();
      if (f.next < adj[f.v].size()) {
        uint32_t w = adj[f.v][f.next++];
        if (index[w] == kNone) {
          index[w] = low[w] = counter++;
          stack.push_back(w);
          on_stack[w] = true;
          frames.push_back({w, 0});
        } else if (on_stack[w]) {
          low[f.v] = std::min(low[f.v], index[w]);
        }
        continue;
      }
      uint32_t v = f.v;
      frames.pop_back();
      if (!frames.empty()) low[frames.back().v] = std::min(low[frames.back().v], low[v]);
      if (low[v] == index[v]) {
        uint32_t w;
        do {
          w = stack.back();
          stack.pop_back();
          on_stack[w] = false;
          comp[w] = num_comps;
        } while (w != v);
        ++num_comps;
      }
    }
  }
  return comp;
}

ReachabilityIndex::ReachabilityIndex(const EGraph& egraph)
    : children_(egraph.class_slots()), stamp_(egraph.class_slots(), 0) {
  for (ClassId c : egraph.class_ids()) {
    std::vector<uint32_t>& out = children_[c.value];
    for (NodeId n : egraph.eclass(c).nodes)
      for (ClassId d : egraph.node(n).children) out.push_back(egraph.find(d).value);
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
  }
  comp_ = strongly_connected_components(children_);
}

bool ReachabilityIndex::reaches(ClassId from, ClassId to) const {
  if (from == to) return true;
  if (from.value >= comp_.size() || to.value >= comp_.size()) return true;
  const uint32_t target = comp_[to.value];
  if (comp_[from.value] == target) return true;
  if (comp_[from.value] < target) return false;  // descendants have smaller component numbers
  if (++epoch_ == 0) {
    std::fill(stamp_.begin(), stamp_.end(), 0);
    epoch_ = 1;
  }
  std::vector<uint32_t> todo{from.value};
  stamp_[from.value] = epoch_;
  while (!todo.empty()) {
    uint32_t v = todo.back();
    todo.pop_back();
    for (uint32_t w : children_[v]) {
      if (w == to.value) return true;
      if (stamp_[w] == epoch_ || comp_[w] < target) continue;
      stamp_[w] = epoch_;
      todo.push_back(w);
    }
  }
  return false;
}

CycleFilterStats blacklist_cycles(const EGraph& egraph, std::vector<bool>& blacklist) {
  blacklist.resize(egraph.node_slots(), false);
  CycleFilterStats stats;
  enum : uint8_t { kWhite, kOnStack, kDone };
  struct Frame {
    ClassId c;
    size_t node_pos = 0, child_pos = 0;
  };
  const std::vector<ClassId> classes = egraph.class_ids();
  auto usable_nodes = [&](ClassId c) {
    size_t k = 0;
    for (NodeId n : egraph.eclass(c).nodes) k += !blacklist[n.value];
    return k;
  };
  bool found = true;
  while (found) {
    found = false;
    ++stats.passes;
    std::vector<uint8_t> state(egraph.class_slots(), kWhite);
    std::vector<size_t> frame_of(egraph.class_slots(), 0);
    std::vector<Frame> frames;
    for (ClassId start : classes) {
      if (state[start.value] != kWhite) continue;
      frames.push_back({start});
      state[start.value] = kOnStack;
      frame_of[start.value] = 0;
      while (!frames.empty()) {
        Frame& f = frames.back();
        const std::vector<NodeId>& nodes = egraph.eclass(f.c).nodes;
        if (f.node_pos == nodes.size()) {
          state[f.c.value] = kDone;
          frames.pop_back();
          continue;
        }
        const NodeId n = nodes[f.node_pos];
        const std::vector<ClassId>& ch = egraph.node(n).children;
        if (blacklist[n.value] || f.child_pos == ch.size()) {
          ++f.node_pos;
          f.child_pos = 0;
          continue;
        }
        const ClassId d = egraph.find(ch[f.child_pos++]);
        if (state[d.value] == kWhite) {
          state[d.value] = kOnStack;
          frame_of[d.value] = frames.size();
          frames.push_back({d});
          continue;
        }
        if (state[d.value] != kOnStack) continue;
        // A cycle: the current node of every frame from d's up to the top.
        found = true;
        const size_t first = frame_of[d.value];
        size_t victim = frames.size();
        for (int pass = 0; pass < 2 && victim == frames.size(); ++pass)
          for (size_t k = first; k < frames.size(); ++k) {
            NodeId cand = egraph.eclass(frames[k].c).nodes[frames[k].node_pos];
            if (pass == 0 && usable_nodes(frames[k].c) < 2) continue;
            if (victim == frames.size() ||
                cand > egraph.eclass(frames[victim].c).nodes[frames[victim].node_pos])
              victim = k;
          }
        blacklist[egraph.eclass(frames[victim].c).nodes[frames[victim].node_pos].value] = true;
        ++stats.blacklisted;
        // Frames above the victim were entered through it: forget them (a later pass re-checks).
        while (frames.size() > victim + 1) {
          state[frames.back().c.value] = kWhite;
          frames.pop_back();
        }
        frames.back().child_pos = 0;
        ++frames.back().node_pos;
      }
    }
  }
  return stats;
}

}  // namespace teq
