#!/usr/bin/env python3
"""l2_policy's layout part replayed on one L2 partition, for set indices and replacement policies
the simulator does not have: a folded set index and tree-PLRU, the two candidates for the GPU's
gradual knee (issue #47; cuda_validate/measurements/CALIBRATION.md, "The L2's gradual knee: a
folded set index and tree-PLRU, tried").

Every SM reads the whole footprint, so each partition holds its own copy and sees the whole sweep
in order: one partition of the H100 (400 sets of 16 ways, 4 KiB regions as the simulator keeps
them) replays 4 sweeps of the pages and counts the hit rate of sweeps 2-4, as
tests/l2_policy_test.cpp does on the simulator itself. Prints, per model, the hit rates at each
fraction of the L2 and the largest distance from the GPU's.

  l2_layout_replay.py [cuda_validate/measurements/h100-sxm5-80gb/edge_l2_2026-12-06/l2_policy/l2_policy_summary.json]
"""
import json
import os
import random
import sys

MASK = (1 << 64) - 1
SETS, WAYS = 400, 16


def mix(x):
    """l2_detail::mix of sim/memory/l2_cache.hpp."""
    x ^= x >> 31
    x = (x * 0x7fb5d329728ea185) & MASK
    x ^= x >> 27
    x = (x * 0x81dadef4bc2dd44d) & MASK
    return x ^ (x >> 33)


def rotation(r):
    """Geometry::set_of: the place in the window, rotated by a hash of the window."""
    return (r % SETS + mix(r // SETS)) % SETS


def folded(r):
    """The candidate (not in the simulator): the place's low 4 bits XORed with a hash of its 64 KiB
    block, a permutation of each block, so a window still takes each set once."""
    p = r % SETS
    if p - p % 16 + 16 <= SETS:
        p ^= mix((r - p % 16) ^ 0x5bd1e9955bd1e995) & 15
    return (p + mix(r // SETS)) % SETS


class Lru:
    def __init__(self):
        self.sets = [[] for _ in range(SETS)]

    def hit(self, s, r):
        ways = self.sets[s]
        found = r in ways
        if found:
            ways.remove(r)
        ways.insert(0, r)
        del ways[WAYS:]
        return found


class TreePlru:
    """A binary tree of 15 bits per 16-way set: each points away from the half used last."""

    def __init__(self):
        self.tags = [[None] * WAYS for _ in range(SETS)]
        self.bits = [[0] * (WAYS - 1) for _ in range(SETS)]

    def hit(self, s, r):
        tags, bits = self.tags[s], self.bits[s]
        found = r in tags
        if found:
            way = tags.index(r)
        elif None in tags:
            way = tags.index(None)
        else:
            way, node = 0, 0
            for _ in range(4):
                way, node = 2 * way + bits[node], 2 * node + 1 + bits[node]
        tags[way] = r
        node = 0
        for level in range(4):
            b = (way >> (3 - level)) & 1
            bits[node] = 1 - b
            node = 2 * node + 1 + b
        return found


def pages(layout, fraction):
    n = int(fraction * 2 * SETS * WAYS)  # a fraction of the whole L2, two partitions
    if layout == "scattered":
        everything = list(range(4 * n))
        random.Random(12345).shuffle(everything)
        return everything[:n]
    stride = {"contiguous": 1, "stride2": 2, "stride16": 16}[layout]
    return [stride * i for i in range(n)]


def hits(set_of, policy, layout, fraction, reps=4):
    cache, footprint, missed = policy(), pages(layout, fraction), 0
    for _ in range(reps):
        for r in footprint:
            missed += not cache.hit(set_of(r), r)
    n = len(footprint)
    return 1 - (missed - n) / ((reps - 1) * n)


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "measurements", "h100-sxm5-80gb",
        "edge_l2_2026-12-06", "l2_policy", "l2_policy_summary.json")
    gpu = {l["layout"]: l["hits"] for l in json.load(open(path))["layout"]}
    models = [("rotation, LRU", rotation, Lru), ("rotation, tree-PLRU", rotation, TreePlru),
              ("folded, LRU", folded, Lru)]
    for name, set_of, policy in models:
        for layout, measured in gpu.items():
            model = [hits(set_of, policy, layout, f) for f, _ in measured]
            worst = max(abs(m - g) for m, (_, g) in zip(model, measured))
            print(f"{name:20s} {layout:10s} " + " ".join(f"{m:4.0%}" for m in model) +
                  f"   GPU " + " ".join(f"{g:4.0%}" for _, g in measured) + f"   worst {worst:.2f}")


if __name__ == "__main__":
    main()
