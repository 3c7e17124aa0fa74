"""benchmarks/bench_threads.py: the scaling table's speed-ups and ratios."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import bench_threads  # noqa: E402


def test_table_gives_speed_ups_over_the_first_count_and_silva_over_the_faster_peer():
    times = {"silva": {1: 10.0, 4: 4.0}, "lightgbm": {1: 16.0, 4: 5.0},
             "xgboost": {1: 12.0, 4: 2.0}}
    table = bench_threads.scaling_table(times, ["silva", "lightgbm", "xgboost"], [1, 4])
    rows = table.splitlines()
    assert rows[0].startswith("| threads | silva fit s (speed-up)")
    # One thread: speed-ups of 1; silva 10 s over XGBoost's 12 s.
    assert rows[2] == "| 1 | 10.00 (1.00x) | 16.00 (1.00x) | 12.00 (1.00x) | 0.83x |"
    # Four threads: 10/4, 16/5 and 12/2; silva 4 s over XGBoost's 2 s.
    assert rows[3] == "| 4 | 4.00 (2.50x) | 5.00 (3.20x) | 2.00 (6.00x) | 2.00x |"
