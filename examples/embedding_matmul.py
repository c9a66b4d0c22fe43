"""The seed's NLP fusion case (section 4.1): an embedding lookup and a matmul, two
``@hybrid`` operators, composed with ``@fusion_group`` so that they compile as one
program, against the same two operators called one after the other.

Both give numpy's ``table[ids] @ w``; the times printed are medians measured side by
side in this run (they say nothing on another machine or load).
"""

import statistics
import time

import numpy as np

from pyasc import fusion_group, hybrid


@hybrid
def embedding(ids, table):
    return table[ids]


@hybrid
def matmul(a, b):
    return a @ b


@fusion_group
def embedding_matmul(ids, table, w):
    return matmul(embedding(ids, table), w)


def unfused(ids, table, w):
    return matmul(embedding(ids, table), w)


def median_time(fn, *args, repeat=15):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _inputs(rng, size):
    vocab, dim, out, n = {"small": (1000, 64, 64, 256), "default": (50000, 256, 256, 4096)}[size]
    table = rng.standard_normal((vocab, dim)).astype(np.float32)
    w = rng.standard_normal((dim, out)).astype(np.float32)
    return rng.integers(0, vocab, n), table, w


def check(size="small", repeat=15):
    """Fused and unfused against numpy, then their times; returns the lines to print."""
    ids, table, w = _inputs(np.random.default_rng(0), size)
    want = table[ids] @ w
    for fn in (embedding_matmul, unfused):
        np.testing.assert_allclose(fn(ids, table, w), want, rtol=1e-4, atol=1e-4)
    fused = median_time(embedding_matmul, ids, table, w, repeat=repeat)
    apart = median_time(unfused, ids, table, w, repeat=repeat)
    return [f"embedding_matmul: {len(ids)} ids, table {table.shape}, w {w.shape}: fused and "
            "unfused equal to numpy",
            f"embedding_matmul: fused {fused * 1e3:.3f} ms, unfused {apart * 1e3:.3f} ms "
            f"(median of {repeat}; unfused / fused = {apart / fused:.2f})"]


DEMO_CASES = [{"name": "embedding_matmul", "fn": embedding_matmul, "inputs": _inputs,
               "rtol": 1e-4}]

if __name__ == "__main__":
    print("\n".join(check("default")))
