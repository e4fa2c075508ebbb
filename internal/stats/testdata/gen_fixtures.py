#!/usr/bin/python3
"""Generate the reference fixtures for gait's internal/stats tests.

Run from anywhere with Debian's numpy and scipy:

    /usr/bin/python3 internal/stats/testdata/gen_fixtures.py

It writes deterministic latency datasets (CSV, seconds, written with Python's
shortest round-trip float repr so Go parses the very same doubles) and
expected.json, the values numpy/scipy compute for them. Expected values are
always computed from the data as read back from the CSV files.

Definitions, matching docs/statistics.md:
  quantiles   numpy.quantile(method="linear") (Hyndman-Fan type 7)
  std         numpy.std(ddof=1)
  outliers    samples strictly greater than mean + 3*std (criterion C2)
  haircut     remove the n // 100 largest samples; mean and max of the rest
  p99 CI      order statistics X(l), X(u), 1-based ranks, B ~ Binomial(n, q),
              F its CDF, a = 1 - confidence:
                l = min{k : F(k) > a/2}
                u = min{k : F(k) >= 1 - a/2} + 1
              valid when 1 <= l and u <= n; coverage = F(u-1) - F(l-1)
  ANOVA       scipy.stats.f_oneway
"""

import csv
import json
import os

import numpy as np
from scipy import stats

HERE = os.path.dirname(os.path.abspath(__file__))
QUANTILES = [0.0, 0.001, 0.01, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 0.995, 0.999, 1.0]
CI_CASES = [(0.5, 0.95), (0.9, 0.99), (0.99, 0.95), (0.99, 0.99), (0.999, 0.95)]


def write_csv(name, header, rows):
    with open(os.path.join(HERE, name), "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(header)
        for r in rows:
            w.writerow([repr(float(v)) if isinstance(v, (float, np.floating)) else v for v in r])


def read_csv(name):
    with open(os.path.join(HERE, name), newline="") as f:
        rows = list(csv.DictReader(f))
    return rows


def order_ci(s, q, conf):
    n = len(s)
    tail = (1 - conf) / 2
    cdf = stats.binom.cdf(np.arange(n + 1), n, q)
    lower = int(np.searchsorted(cdf, tail, side="right"))
    upper = int(np.searchsorted(cdf, 1 - tail, side="left")) + 1
    out = {"q": q, "confidence": conf, "ok": bool(lower >= 1 and upper <= n)}
    if out["ok"]:
        out.update(
            lower_rank=lower,
            upper_rank=upper,
            lower=float(s[lower - 1]),
            upper=float(s[upper - 1]),
            coverage=float(cdf[upper - 1] - cdf[lower - 1]),
        )
    else:
        out["min_n"] = min_n_for_ci(q, conf)
    return out


def min_n_for_ci(q, conf):
    """Smallest n for which order_ci finds both ranks, by direct search."""
    tail = (1 - conf) / 2
    n = 1
    while True:
        cdf = stats.binom.cdf(np.arange(n + 1), n, q)
        lower = int(np.searchsorted(cdf, tail, side="right"))
        upper = int(np.searchsorted(cdf, 1 - tail, side="left")) + 1
        if lower >= 1 and upper <= n:
            return n
        n += 1


def describe(x):
    s = np.sort(np.asarray(x, dtype=np.float64))
    n = len(s)
    mean = float(np.mean(s))
    std = float(np.std(s, ddof=1)) if n > 1 else 0.0
    thr = mean + 3 * std
    out_count = int(np.sum(s > thr))
    k = n // 100
    kept = s[: n - k]
    return {
        "n": n,
        "mean": mean,
        "std": std,
        "min": float(s[0]),
        "max": float(s[-1]),
        "quantiles": [[q, float(np.quantile(s, q, method="linear"))] for q in QUANTILES],
        "c1": bool(s[-1] > 10 * mean),
        "max_over_mean": float(s[-1] / mean),
        "p99_over_mean": float(np.quantile(s, 0.99, method="linear") / mean),
        "outliers": {
            "threshold": thr,
            "count": out_count,
            "share": out_count / n,
            "largest_over_mean": float(s[-1] / mean) if out_count else 0.0,
            "largest_z": float((s[-1] - mean) / std) if out_count else 0.0,
        },
        "haircut": {"removed": k, "mean": float(np.mean(kept)), "max": float(kept[-1])},
        "ci": [order_ci(s, q, c) for q, c in CI_CASES],
    }


def anova(groups):
    r = stats.f_oneway(*groups)
    k = len(groups)
    n = sum(len(g) for g in groups)
    return {"f": float(r.statistic), "p": float(r.pvalue), "df_between": k - 1, "df_within": n - k}


def make_data(rng):
    data = {}
    base = rng.lognormal(mean=np.log(1e-3), sigma=0.4, size=10000)
    hit = rng.choice(base.size, size=50, replace=False)
    base[hit] *= rng.uniform(20, 300, size=hit.size)
    data["lognormal_outliers.csv"] = base
    data["exponential.csv"] = 5e-5 + rng.exponential(scale=2e-4, size=5000)
    data["small.csv"] = rng.lognormal(mean=np.log(2e-3), sigma=0.3, size=50)
    for name, x in data.items():
        write_csv(name, ["latency_s"], [[v] for v in x])

    rows = []
    for level, (size, shape, scale) in zip(["a", "b", "c", "d"],
                                           [(150, 2.0, 1e-3), (200, 2.2, 1e-3),
                                            (250, 2.0, 1.1e-3), (300, 3.0, 0.7e-3)]):
        rows += [[level, v] for v in rng.gamma(shape, scale, size=size)]
    write_csv("groups.csv", ["level", "latency_s"], rows)

    # clients changes the latency, payload does not; one configuration has
    # 1.5% of very slow requests, so its p99 bound exceeds 25x its mean.
    rows = []
    for clients in [1, 4, 16]:
        for payload in [16, 4096]:
            x = rng.lognormal(mean=np.log(2e-4 * (1 + clients / 4)), sigma=0.3, size=600)
            if clients == 16 and payload == 4096:
                slow = rng.choice(x.size, size=9, replace=False)
                x[slow] *= rng.uniform(80, 120, size=slow.size)
            rows += [[clients, payload, v] for v in x]
    write_csv("grid.csv", ["clients", "payload", "latency_s"], rows)


def expected():
    out = {"datasets": {}}
    for name in ["lognormal_outliers.csv", "exponential.csv", "small.csv"]:
        x = [float(r["latency_s"]) for r in read_csv(name)]
        out["datasets"][name] = describe(x)

    by_level = {}
    for r in read_csv("groups.csv"):
        by_level.setdefault(r["level"], []).append(float(r["latency_s"]))
    out["groups"] = {"file": "groups.csv", "anova": anova([by_level[k] for k in sorted(by_level)])}
    # Well separated groups: p far below 1e-16, where 1 - CDF rounds to 0.
    sep = [[1 + 0.01 * i for i in range(20)], [2 + 0.01 * i for i in range(20)]]
    out["separated"] = {"groups": sep, "anova": anova(sep)}

    configs = {}
    for r in read_csv("grid.csv"):
        key = (r["clients"], r["payload"])
        configs.setdefault(key, []).append(float(r["latency_s"]))
    factors = {"clients": 0, "payload": 1}
    grid = {"file": "grid.csv", "factors": {}}
    for f, i in factors.items():
        levels = sorted({k[i] for k in configs}, key=float)
        req = [sum((configs[k] for k in configs if k[i] == lv), []) for lv in levels]
        p99 = [[np.quantile(configs[k], 0.99, method="linear") for k in configs if k[i] == lv] for lv in levels]
        mx = [[max(configs[k]) for k in configs if k[i] == lv] for lv in levels]
        grid["factors"][f] = {"levels": levels, "latency": anova(req), "p99": anova(p99), "max": anova(mx)}
    worst, upper = None, {}
    for (c, p), x in configs.items():
        label = f"clients={c} payload={p}"
        s = np.sort(x)
        ratio = np.quantile(s, 0.99, method="linear") / np.mean(s)
        if worst is None or ratio > worst[1]:
            worst = (label, float(ratio))
        ci = order_ci(s, 0.99, 0.99)
        upper[label] = ci["upper"] / float(np.mean(s)) if ci["ok"] else None
    grid["headline"] = {
        "worst_p99_config": worst[0],
        "worst_p99_over_mean": worst[1],
        "upper_over_mean": upper,
        "exceeding": sorted(k for k, v in upper.items() if v is not None and v > 25),
    }
    out["grid"] = grid
    return out


def main():
    make_data(np.random.default_rng(20240614))
    with open(os.path.join(HERE, "expected.json"), "w") as f:
        json.dump(expected(), f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
